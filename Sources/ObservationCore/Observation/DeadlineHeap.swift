/// A min-heap of deadlines, at most one per id: scheduling an id again moves its deadline,
/// and cancelling removes it. Equal deadlines come out in id order, whatever order they went
/// in (a replica rebuilt from a checkpoint must expire leases in the same order). Its size is
/// the number of ids with a deadline, however often they move (a keepalive per second does
/// not grow it).
public struct DeadlineHeap<Deadline: Comparable & Sendable>: Sendable {
    private var entries: [(deadline: Deadline, id: String)] = []
    /// Where each id's entry is in `entries`.
    private var positions: [String: Int] = [:]

    public init() {}

    public var first: (deadline: Deadline, id: String)? { entries.first }
    public var count: Int { entries.count }

    /// Sets `id`'s deadline (adding it, or moving it earlier or later).
    public mutating func schedule(_ id: String, at deadline: Deadline) {
        if let index = positions[id] {
            entries[index].deadline = deadline
            siftUp(index)
            siftDown(positions[id] ?? index)
        } else {
            entries.append((deadline, id))
            positions[id] = entries.count - 1
            siftUp(entries.count - 1)
        }
    }

    /// Removes `id`'s deadline, if it has one.
    public mutating func cancel(_ id: String) {
        guard let index = positions.removeValue(forKey: id) else { return }
        let last = entries.count - 1
        if index != last {
            entries.swapAt(index, last)
            positions[entries[index].id] = index
        }
        entries.removeLast()
        if index < entries.count {
            siftUp(index)
            siftDown(index)
        }
    }

    /// Removes and returns the earliest deadline.
    public mutating func popFirst() -> (deadline: Deadline, id: String)? {
        guard let top = entries.first else { return nil }
        cancel(top.id)
        return top
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(entries[child], entries[parent]) else { break }
            swap(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, precedes(entries[left], entries[smallest]) { smallest = left }
            if right < entries.count, precedes(entries[right], entries[smallest]) { smallest = right }
            guard smallest != parent else { return }
            swap(parent, smallest)
            parent = smallest
        }
    }

    /// The heap's order: by deadline, then by id.
    private func precedes(_ a: (deadline: Deadline, id: String), _ b: (deadline: Deadline, id: String)) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    private mutating func swap(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        positions[entries[a].id] = a
        positions[entries[b].id] = b
    }
}
