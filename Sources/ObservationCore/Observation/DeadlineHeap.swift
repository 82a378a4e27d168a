/// A min-heap of deadlines, at most one per id: scheduling an id again moves its deadline,
/// and cancelling removes it. Equal deadlines come out in id order, whatever order they went
/// in (a replica rebuilt from a checkpoint must expire leases in the same order).
///
/// Moving or cancelling leaves the old entry in the heap, stale, instead of finding and
/// re-sifting it: both cost one dictionary update (a stream opening cancels its observer's
/// lease, and sifting with a position table rehashed ids at every level). Stale entries are
/// dropped when they reach the top, which is always live; when they outnumber the live ones
/// the heap is rebuilt, so its size stays within twice the ids with a deadline (plus a few)
/// however often they move (a keepalive per second does not grow it).
public struct DeadlineHeap<Deadline: Comparable & Sendable>: Sendable {
    /// The heap, by (deadline, id); an entry whose deadline is no longer its id's is stale.
    private var entries: [(deadline: Deadline, id: String)] = []
    /// Each id's deadline now.
    private var live: [String: Deadline] = [:]

    public init() {}

    public var first: (deadline: Deadline, id: String)? { entries.first }
    public var count: Int { live.count }
    /// Entries held, stale ones included (at most twice `count`, plus 16).
    var stored: Int { entries.count }

    /// Sets `id`'s deadline (adding it, or moving it earlier or later).
    public mutating func schedule(_ id: String, at deadline: Deadline) {
        guard live.updateValue(deadline, forKey: id) != deadline else { return }
        entries.append((deadline, id))
        siftUp(entries.count - 1)
        settle()
    }

    /// Removes `id`'s deadline, if it has one.
    public mutating func cancel(_ id: String) {
        guard live.removeValue(forKey: id) != nil else { return }
        settle()
    }

    /// `id`'s deadline, if it has one.
    public func deadline(of id: String) -> Deadline? { live[id] }

    /// Removes and returns the earliest deadline.
    public mutating func popFirst() -> (deadline: Deadline, id: String)? {
        guard let top = entries.first else { return nil }
        live[top.id] = nil
        removeTop()
        settle()
        return top
    }

    /// Keeps the top live, and the stale entries no more than the live ones.
    private mutating func settle() {
        while let top = entries.first, live[top.id] != top.deadline { removeTop() }
        guard entries.count > 2 * live.count + 16 else { return }
        // A sorted array is a heap; sorting by the heap's own order keeps it deterministic.
        entries = live.map { (deadline: $0.value, id: $0.key) }.sorted(by: Self.precedes)
    }

    private mutating func removeTop() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        siftDown(0)
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, Self.precedes(entries[left], entries[smallest]) { smallest = left }
            if right < entries.count, Self.precedes(entries[right], entries[smallest]) { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }

    /// The heap's order: by deadline, then by id.
    private static func precedes(_ a: (deadline: Deadline, id: String), _ b: (deadline: Deadline, id: String)) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }
}
