/// How a `SortedChunks` orders its elements.
protocol ChunkOrder: Sendable {
    associatedtype Element: Sendable & Equatable
    func precedes(_ a: Element, _ b: Element) -> Bool
}

/// Distinct elements kept in order as a list of sorted chunks of bounded size: inserting or
/// removing one moves at most a chunk's worth of elements, finding one is two binary searches
/// (over the chunks' last elements, then within one chunk), and reading in order from any
/// element costs what is read. The object ids of a class (`SortedIDs`) and a query's members
/// in its order (`OrderedMembers`) are kept this way.
struct SortedChunks<Order: ChunkOrder>: Sendable {
    typealias Element = Order.Element
    let order: Order
    private let maxChunk: Int
    private var chunks: [[Element]] = []
    private(set) var count = 0

    init(order: Order, maxChunk: Int) {
        self.order = order
        self.maxChunk = maxChunk
    }

    /// Adds `element` (nothing when it is there already).
    mutating func insert(_ element: Element) {
        guard !chunks.isEmpty else {
            chunks = [[element]]
            count = 1
            return
        }
        let chunk = min(firstChunk { !order.precedes($0, element) }, chunks.count - 1)
        let position = Self.first(chunks[chunk].count) { !order.precedes(chunks[chunk][$0], element) }
        if position < chunks[chunk].count, chunks[chunk][position] == element { return }
        chunks[chunk].insert(element, at: position)
        count += 1
        if chunks[chunk].count > maxChunk {
            let upper = Array(chunks[chunk][(maxChunk / 2)...])
            chunks[chunk].removeLast(upper.count)
            chunks.insert(upper, at: chunk + 1)
        }
    }

    mutating func remove(_ element: Element) {
        guard let (chunk, position) = find(element) else { return }
        chunks[chunk].remove(at: position)
        count -= 1
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
    }

    /// The position of `element` when it is held before `limit`; nil when it is not held, or
    /// stands at `limit` or after (the counts of the chunks before it are summed until then).
    func position(of element: Element, below limit: Int) -> Int? {
        guard let (chunk, position) = find(element) else { return nil }
        var before = position
        for index in 0..<chunk {
            before += chunks[index].count
            if before >= limit { return nil }
        }
        return before < limit ? before : nil
    }

    /// Calls `body` with the elements after `element` (all of them when nil), in order, until
    /// it returns false. `element` need not be held.
    func forEach(after element: Element?, _ body: (Element) -> Bool) {
        var chunk = 0
        var position = 0
        if let element {
            chunk = firstChunk { order.precedes(element, $0) }
            guard chunk < chunks.count else { return }
            position = Self.first(chunks[chunk].count) { order.precedes(element, chunks[chunk][$0]) }
        }
        while chunk < chunks.count {
            while position < chunks[chunk].count {
                guard body(chunks[chunk][position]) else { return }
                position += 1
            }
            chunk += 1
            position = 0
        }
    }

    /// The first `limit` elements after `element` (all when nil), and whether more follow.
    func page(after element: Element?, limit: Int) -> (elements: [Element], more: Bool) {
        var elements: [Element] = []
        elements.reserveCapacity(Swift.min(limit, count))
        var more = false
        forEach(after: element) { next in
            guard elements.count < limit else {
                more = true
                return false
            }
            elements.append(next)
            return true
        }
        return (elements, more)
    }

    private func find(_ element: Element) -> (Int, Int)? {
        let chunk = firstChunk { !order.precedes($0, element) }
        guard chunk < chunks.count else { return nil }
        let position = Self.first(chunks[chunk].count) { !order.precedes(chunks[chunk][$0], element) }
        guard position < chunks[chunk].count, chunks[chunk][position] == element else { return nil }
        return (chunk, position)
    }

    /// The first chunk whose last element satisfies `condition` (false for the chunks before it).
    private func firstChunk(_ condition: (Element) -> Bool) -> Int {
        Self.first(chunks.count) { condition(chunks[$0][chunks[$0].count - 1]) }
    }

    /// The first index in `0..<count` at which `condition` holds, it being false before it and
    /// true after (binary search).
    private static func first(_ count: Int, where condition: (Int) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if condition(middle) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}
