/// A min-heap of (deadline, id) with lazy deletion: entries are checked against the
/// current state when they come out, so moving or cancelling a deadline is a push.
struct DeadlineHeap: Sendable {
    private var entries: [(deadline: ContinuousClock.Instant, id: String)] = []

    var first: (deadline: ContinuousClock.Instant, id: String)? { entries.first }

    mutating func push(_ deadline: ContinuousClock.Instant, _ id: String) {
        entries.append((deadline, id))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].deadline < entries[parent].deadline else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> (deadline: ContinuousClock.Instant, id: String)? {
        guard !entries.isEmpty else { return nil }
        entries.swapAt(0, entries.count - 1)
        let top = entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, entries[left].deadline < entries[smallest].deadline { smallest = left }
            if right < entries.count, entries[right].deadline < entries[smallest].deadline { smallest = right }
            guard smallest != parent else { break }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
        return top
    }
}
