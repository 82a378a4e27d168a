/// A registration as the dependents index knows it: its creation sequence (the order its records
/// go out in) and the slot `RegistrationIndex` keeps it in.
struct Dependent: Sendable, Equatable {
    let sequence: Int
    let slot: Int

    fileprivate func precedes(_ other: Dependent) -> Bool {
        (sequence, slot) < (other.sequence, other.slot)
    }
}

/// The registrations reading each place, by object and then by the top-level key read ("" for
/// the object's existence), in sequence order: what a write reaches, found by two lookups and
/// read in order, with no registration id hashed and no registration read when the key alone
/// decides (issue 46: the chain of sets and ids this replaces was a quarter of a W3 write's
/// cache misses).
struct RegistrationDependents: Sendable {
    /// One registration under one (object, key): how many of its paths start there, and how
    /// many of those are that key alone (then any write under the key reaches it).
    struct Entry: Sendable {
        let dependent: Dependent
        var paths: Int32
        var wholeKey: Int32
    }

    private(set) var table: [String: [String: [Entry]]] = [:]
    /// Counts the entries added and removed (what `RegistrationIndex.affected` remembers holds
    /// while it stays).
    private(set) var generation = 0

    mutating func add(_ dependent: Dependent, at path: ObjectPath) {
        generation += 1
        let whole: Int32 = path.keys.count == 1 ? 1 : 0
        table[path.objectID, default: [:]][path.keys.first ?? "", default: []].enter(dependent, wholeKey: whole)
    }

    mutating func remove(_ dependent: Dependent, at path: ObjectPath) {
        generation += 1
        let key = path.keys.first ?? ""
        let whole: Int32 = path.keys.count == 1 ? 1 : 0
        guard table[path.objectID]?[key]?.leave(dependent, wholeKey: whole) == true else { return }
        table[path.objectID]?[key] = nil
        if table[path.objectID]?.isEmpty == true { table[path.objectID] = nil }
    }

    /// What `RegistrationIndex.update` hands a change of one registration: its entries, to move
    /// to the places it reads now. Holds the index for the change (swapped in and out, never copied).
    struct Rebinding {
        fileprivate var index = RegistrationDependents()
        fileprivate let slot: Int

        fileprivate init(slot: Int) { self.slot = slot }

        /// Moves the registration's entries to `paths` (what it reads now).
        mutating func rebind(_ registration: inout Registration, to paths: Set<ObjectPath>) {
            guard paths != registration.dependencies else { return }
            let dependent = Dependent(sequence: registration.sequence, slot: slot)
            for path in registration.dependencies.subtracting(paths) { index.remove(dependent, at: path) }
            for path in paths.subtracting(registration.dependencies) { index.add(dependent, at: path) }
            registration.dependencies = paths
        }
    }

    /// Runs `body` with the index lent to a `Rebinding` for the registration in `slot`.
    mutating func lending<T>(to slot: Int, _ body: (inout Rebinding) -> T) -> T {
        var rebinding = Rebinding(slot: slot)
        swap(&rebinding.index, &self)
        defer { swap(&rebinding.index, &self) }
        return body(&rebinding)
    }
}

extension [RegistrationDependents.Entry] {
    /// Enters one more path of `dependent`, keeping sequence order (a new registration, the
    /// usual case, goes last).
    fileprivate mutating func enter(_ dependent: Dependent, wholeKey: Int32) {
        let place = last.map { $0.dependent.precedes(dependent) } == false ? insertionPoint(of: dependent) : count
        if place < count, self[place].dependent == dependent {
            self[place].paths += 1
            self[place].wholeKey += wholeKey
        } else {
            insert(.init(dependent: dependent, paths: 1, wholeKey: wholeKey), at: place)
        }
    }

    /// Takes one path of `dependent` out; true when the list is left empty.
    fileprivate mutating func leave(_ dependent: Dependent, wholeKey: Int32) -> Bool {
        let place = insertionPoint(of: dependent)
        guard place < count, self[place].dependent == dependent else { return isEmpty }
        self[place].paths -= 1
        self[place].wholeKey -= wholeKey
        if self[place].paths <= 0 { remove(at: place) }
        return isEmpty
    }

    /// The first place whose dependent does not precede `dependent` (binary search).
    private func insertionPoint(of dependent: Dependent) -> Int {
        var (low, high) = (0, count)
        while low < high {
            let middle = (low + high) / 2
            if self[middle].dependent.precedes(dependent) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
