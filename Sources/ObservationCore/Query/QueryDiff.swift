/// A member of a query's window as records show it: its id and its selected values (in
/// `select` order).
struct WindowMember: Sendable, Equatable {
    let id: String
    let selected: [JSON]
}

/// How a window changed (section 12's query record, before encoding): `CollectionDifference`
/// semantics, the members that keep their place being a longest common subsequence of the
/// old and new windows.
struct QueryDiff: Sendable {
    struct Entry: Sendable {
        let index: Int
        let member: WindowMember
        let moved: Bool
    }

    struct Update: Sendable {
        let index: Int
        let id: String
        /// Positions in `select` of the values that changed, with their old and new values.
        let changes: [(position: Int, old: JSON, new: JSON)]
    }

    var removed: [Entry] = []
    var inserted: [Entry] = []
    var updated: [Update] = []
    var total: Int

    /// Whether it tells nothing (the window and its values are the same).
    var isEmpty: Bool { removed.isEmpty && inserted.isEmpty && updated.isEmpty }

    /// Every member of `window` inserted: the `initial` record (and the rebuild after `reset`).
    static func initial(_ window: [WindowMember], total: Int) -> QueryDiff {
        QueryDiff(
            inserted: window.enumerated().map { Entry(index: $0.offset, member: $0.element, moved: false) },
            total: total)
    }

    /// From `old` to `new` (each with distinct ids).
    static func between(_ old: [WindowMember], _ new: [WindowMember], total: Int) -> QueryDiff {
        var diff = QueryDiff(total: total)
        if old == new { return diff }
        var newPositions: [String: Int] = [:]
        newPositions.reserveCapacity(new.count)
        for (index, member) in new.enumerated() { newPositions[member.id] = index }
        // The common members in old order, by their new positions: a longest increasing run of
        // those is a longest common subsequence (ids are distinct).
        var common: [(old: Int, new: Int)] = []
        for (index, member) in old.enumerated() {
            if let position = newPositions[member.id] { common.append((index, position)) }
        }
        let kept = longestIncreasing(common.map(\.new)).map { common[$0] }
        var keptOld = Set<Int>()
        var keptNew = Set<Int>()
        for pair in kept {
            keptOld.insert(pair.old)
            keptNew.insert(pair.new)
        }
        let inNew = Set(common.map(\.old))
        let inOld = Set(common.map(\.new))
        for (index, member) in old.enumerated() where !keptOld.contains(index) {
            diff.removed.append(Entry(index: index, member: member, moved: inNew.contains(index)))
        }
        for (index, member) in new.enumerated() where !keptNew.contains(index) {
            diff.inserted.append(Entry(index: index, member: member, moved: inOld.contains(index)))
        }
        for pair in kept where old[pair.old].selected != new[pair.new].selected {
            let before = old[pair.old].selected
            let after = new[pair.new].selected
            let changes = before.indices.compactMap { position in
                before[position] == after[position] ? nil : (position, before[position], after[position])
            }
            diff.updated.append(Update(index: pair.new, id: new[pair.new].id, changes: changes))
        }
        diff.updated.sort { $0.index < $1.index }
        return diff
    }

    /// The indexes (into `values`) of a longest strictly increasing subsequence, in order
    /// (patience sorting: O(n log n)); the same input always gives the same answer.
    static func longestIncreasing(_ values: [Int]) -> [Int] {
        var tails: [Int] = []  // indexes into values: the smallest tail of a run of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var run: [Int] = []
        var cursor = tails.last ?? -1
        while cursor >= 0 {
            run.append(cursor)
            cursor = previous[cursor]
        }
        return run.reversed()
    }
}
