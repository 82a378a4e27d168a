/// Every KVO registration, and the indexes that find them: by id, by observer and
/// (object, key path) (FBKVOController's dedup table), by observed object (deletion,
/// retain/release), and by the (object, top-level key) places each one currently reads
/// (a write finds what it affects here, never by a scan).
///
/// Owns its fields; knows nothing of values (binding a registration is the propagator's).
/// Every list it hands out is in creation order (`sequence`), never in hash order.
struct RegistrationIndex: Sendable {
    /// Every registration, in the slot it was given: the dependents reach one by its slot, never
    /// by hashing its id. A removed registration's slot is reused (the last freed first).
    private var slots: [Registration?] = []
    private var freeSlots: [Int] = []
    /// Each registration's slot, by id.
    private var slotByID: [String: Int] = [:]
    /// The registrations by the places they read (a write finds what it affects there).
    private var dependents = RegistrationDependents()
    /// Registration ids by the object they observe.
    private var byObject: [String: Set<String>] = [:]
    /// Registration ids by observer, then by (object, key path): the deduplication table.
    private var byObserver: [String: [RegistrationTarget: String]] = [:]
    /// The last creation sequence handed out.
    private(set) var sequence = 0
    /// Counts insertions and removals: a `Position` (and so `memo`) holds while it stays.
    private var generation = 0
    /// The last one-key write's answer (`affected`): a write to the place last written, with
    /// no registration added, removed or re-bound since, reaches the same registrations at the
    /// same positions (W2's 1,000 observers of one key: the list not walked again per write).
    private var memo: AffectedMemo?

    var count: Int { slotByID.count }

    /// Every registration id, sorted.
    var ids: [String] { slotByID.keys.sorted() }

    subscript(id: String) -> Registration? { slotByID[id].flatMap { slots[$0] } }

    /// The registration of (object, key path) an observer holds, if any.
    func registration(of observerID: String, at target: RegistrationTarget) -> Registration? {
        byObserver[observerID]?[target].flatMap { self[$0] }
    }

    /// How many registrations an observer holds.
    func count(of observerID: String) -> Int { byObserver[observerID]?.count ?? 0 }

    /// An observer's registrations, in creation order.
    func owned(by observerID: String) -> [Registration] {
        inCreationOrder(byObserver[observerID]?.values.compactMap { self[$0] } ?? [])
    }

    /// The registrations observing `objectID` itself, in creation order.
    func observing(_ objectID: String) -> [Registration] {
        inCreationOrder((byObject[objectID] ?? []).compactMap { self[$0] })
    }

    /// The observers holding a registration on `objectID`, sorted.
    func observers(of objectID: String) -> [String] {
        Set((byObject[objectID] ?? []).compactMap { self[$0]?.observerID }).sorted()
    }

    /// Takes the next creation sequence.
    mutating func nextSequence() -> Int {
        sequence += 1
        return sequence
    }

    /// Continues the sequence of an earlier run (restoring).
    mutating func continueSequence(after value: Int) { sequence = max(sequence, value) }

    /// Enters a bound registration in every index (its dependencies included); one with the id
    /// of a registration already there replaces it.
    mutating func insert(_ registration: Registration) {
        remove(registration.id)
        generation += 1
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = registration
        } else {
            slot = slots.count
            slots.append(registration)
        }
        slotByID[registration.id] = slot
        byObject[registration.objectID, default: []].insert(registration.id)
        byObserver[registration.observerID, default: [:]][registration.target] = registration.id
        let dependent = Dependent(sequence: registration.sequence, slot: slot)
        for path in registration.dependencies { dependents.add(dependent, at: path) }
    }

    /// Takes a registration out of every index; returns it.
    @discardableResult
    mutating func remove(_ id: String) -> Registration? {
        guard let slot = slotByID.removeValue(forKey: id), let registration = slots[slot] else { return nil }
        slots[slot] = nil
        freeSlots.append(slot)
        generation += 1
        let dependent = Dependent(sequence: registration.sequence, slot: slot)
        for path in registration.dependencies { dependents.remove(dependent, at: path) }
        byObject[registration.objectID]?.remove(id)
        if byObject[registration.objectID]?.isEmpty == true { byObject[registration.objectID] = nil }
        byObserver[registration.observerID]?[registration.target] = nil
        if byObserver[registration.observerID]?.isEmpty == true { byObserver[registration.observerID] = nil }
        return registration
    }

    /// Changes a registration where it is (no copy, no re-insertion); `body` may move its
    /// dependencies (`Rebinding.rebind`). Nil when there is no such registration.
    mutating func update<T>(
        _ id: String, _ body: (inout Registration, inout RegistrationDependents.Rebinding) -> T
    ) -> T? {
        slotByID[id].flatMap { update(inSlot: $0, body) }
    }

    /// `update` of the registration at `position` (from `affected`, no registration added or
    /// removed since): its id is not looked up.
    @discardableResult
    mutating func update<T>(
        at position: Position, _ body: (inout Registration, inout RegistrationDependents.Rebinding) -> T
    ) -> T? {
        update(inSlot: position.slot, body)
    }

    private mutating func update<T>(
        inSlot slot: Int, _ body: (inout Registration, inout RegistrationDependents.Rebinding) -> T
    ) -> T? {
        guard slots.indices.contains(slot), slots[slot] != nil else { return nil }
        return dependents.lending(to: slot) { body(&slots[slot]!, &$0) }
    }

    /// Where a registration is in the index: valid until a registration is added or removed.
    struct Position {
        fileprivate let slot: Int
    }

    /// The registrations reading object `id`, by the key they read: nil when none does (a
    /// write to it affects none). Handed to `affected(by:among:)`, which then does not look
    /// them up again.
    func dependents(of id: String) -> ObjectDependents? {
        dependents.table[id].map { ObjectDependents(objectID: id, byKey: $0) }
    }

    /// What `dependents(of:)` found.
    struct ObjectDependents {
        fileprivate let objectID: String
        fileprivate let byKey: [String: [RegistrationDependents.Entry]]

        /// No object's: every object written is looked up (ids are never empty).
        fileprivate static let none = ObjectDependents(objectID: "", byKey: [:])
    }

    /// The registrations a set of writes affects, where they are, each with the policy that
    /// governs it (the most eager of the policies of the keys written), in creation order.
    mutating func affected(by writes: [Write]) -> [(sequence: Int, position: Position, policy: NotifyPolicy)] {
        affected(by: writes, among: .none)
    }

    /// `affected(by:)`, with what `dependents(of:)` found for one of the objects written.
    mutating func affected(
        by writes: [Write], among known: ObjectDependents
    ) -> [(sequence: Int, position: Position, policy: NotifyPolicy)] {
        guard writes.count == 1, writes[0].location.keys.count == 1 else { return search(writes, known) }
        if memo?.holds(for: writes[0], generation, dependents.generation) == true, let found = memo?.found {
            return found
        }
        let found = search(writes, known)
        // Worth remembering where walking the list again would cost the most.
        if found.count >= AffectedMemo.fewest {
            memo = AffectedMemo(
                location: writes[0].location, policy: writes[0].policy,
                generations: (generation, dependents.generation), found: found)
        }
        return found
    }

    private func search(
        _ writes: [Write], _ known: ObjectDependents
    ) -> [(sequence: Int, position: Position, policy: NotifyPolicy)] {
        var found: [(sequence: Int, position: Position, policy: NotifyPolicy)] = []
        // A registration reached more than once (several writes, or an object written whole and
        // read under several keys) is found once, with the most eager policy; by slot.
        let repeats = writes.count > 1 || writes.contains { $0.location.keys.isEmpty }
        var places: [Int: Int] = [:]
        for write in writes {
            let objectID = write.location.objectID
            guard let byKey = known.objectID == objectID ? known.byKey : dependents.table[objectID] else { continue }
            func visit(_ list: [RegistrationDependents.Entry]) {
                // Once: reserving again for every write could copy the list every time.
                if found.isEmpty { found.reserveCapacity(list.count) }
                for entry in list {
                    let slot = entry.dependent.slot
                    guard entry.wholeKey > 0 || reads(slot, write) else { continue }
                    if repeats, let known = places[slot] {
                        found[known].policy = Self.eager(found[known].policy, write.policy)
                        continue
                    }
                    if repeats { places[slot] = found.count }
                    found.append((entry.dependent.sequence, Position(slot: slot), write.policy))
                }
            }
            if let first = write.location.keys.first {
                if let list = byKey[first] { visit(list) }
            } else {
                for list in byKey.values { visit(list) }  // any order: `found` is sorted by sequence below
            }
        }
        // One key's list is in sequence order already.
        return repeats ? Self.inSequenceOrder(found) : found
    }

    /// Whether the registration in `slot` reads a place `write` changed: an object written
    /// whole reaches all that read it; a key, those reading a path it overlaps (a registration
    /// reading only deeper under the key may read beside the write).
    private func reads(_ slot: Int, _ write: Write) -> Bool {
        write.location.keys.isEmpty
            || slots[slot]?.dependencies.contains { !$0.keys.isEmpty && $0.overlaps(write.location) } == true
    }

    /// `found` in sequence order. When every sequence fits beside a place in `found`, the pairs
    /// are sorted as plain integers (sequence, then place): a fraction of sorting the tuples
    /// through a comparison closure.
    private static func inSequenceOrder(
        _ found: [(sequence: Int, position: Position, policy: NotifyPolicy)]
    ) -> [(sequence: Int, position: Position, policy: NotifyPolicy)] {
        guard found.count > 1 else { return found }
        let placeBits = UInt64(Int.bitWidth - (found.count - 1).leadingZeroBitCount)
        let largest = found.reduce(0) { max($0, $1.sequence) }
        guard found.allSatisfy({ $0.sequence >= 0 }), UInt64(largest) < (1 as UInt64) << (64 - placeBits) else {
            return found.sorted { $0.sequence < $1.sequence }
        }
        var keys = found.indices.map { UInt64(found[$0].sequence) << placeBits | UInt64($0) }
        keys.sort()
        let mask = ((1 as UInt64) << placeBits) - 1
        return keys.map { found[Int($0 & mask)] }
    }

    private func inCreationOrder(_ list: [Registration]) -> [Registration] {
        list.sorted { $0.sequence < $1.sequence }
    }

    /// The more eager of two policies (a write reaching a registration through several places).
    static func eager(_ a: NotifyPolicy, _ b: NotifyPolicy) -> NotifyPolicy {
        if a == .always || b == .always { return .always }
        return a == .onChange || b == .onChange ? .onChange : .manual
    }
}

/// A change to stored data: the place written and the notify policy of the key set there.
struct Write {
    let location: ObjectPath
    let policy: NotifyPolicy
    /// The value now stored at `location`, when the write knows it (a set or a PATCH): a
    /// registration reading that one place takes it from here, not from the graph.
    var stored: JSON? = nil
}

/// `RegistrationIndex.affected`'s answer for one place written, and what it holds for.
private struct AffectedMemo: Sendable {
    /// The fewest registrations reached for an answer to be remembered.
    static let fewest = 8

    let location: ObjectPath
    let policy: NotifyPolicy
    /// The index's insertions and removals, and its dependents' changes, when it was found.
    let generations: (Int, Int)
    let found: [(sequence: Int, position: RegistrationIndex.Position, policy: NotifyPolicy)]

    func holds(for write: Write, _ generation: Int, _ dependentsGeneration: Int) -> Bool {
        generations == (generation, dependentsGeneration) && policy == write.policy && location == write.location
    }
}
