/// A set of ids kept in ascending order, for cursor paging.
///
/// Stored as a list of sorted chunks of bounded size, so inserting or removing
/// one id moves at most one chunk's worth of elements, and a page starts with
/// two binary searches: cost proportional to the page, not to the whole set.
struct SortedIDs: Sendable {
    private static let maxChunk = 1024
    private var chunks: [[String]] = []
    private(set) var count = 0

    mutating func insert(_ id: String) {
        guard !chunks.isEmpty else {
            chunks = [[id]]
            count = 1
            return
        }
        let chunkIndex = Self.lowerBound(chunks.count) { chunks[$0].last! < id }
        let target = min(chunkIndex, chunks.count - 1)
        let position = Self.lowerBound(chunks[target].count) { chunks[target][$0] < id }
        if position < chunks[target].count, chunks[target][position] == id { return }
        chunks[target].insert(id, at: position)
        count += 1
        if chunks[target].count > Self.maxChunk {
            let upper = Array(chunks[target][(Self.maxChunk / 2)...])
            chunks[target].removeLast(upper.count)
            chunks.insert(upper, at: target + 1)
        }
    }

    mutating func remove(_ id: String) {
        let chunkIndex = Self.lowerBound(chunks.count) { chunks[$0].last! < id }
        guard chunkIndex < chunks.count else { return }
        let position = Self.lowerBound(chunks[chunkIndex].count) { chunks[chunkIndex][$0] < id }
        guard position < chunks[chunkIndex].count, chunks[chunkIndex][position] == id else { return }
        chunks[chunkIndex].remove(at: position)
        count -= 1
        if chunks[chunkIndex].isEmpty { chunks.remove(at: chunkIndex) }
    }

    /// Up to `limit` ids greater than `cursor` (all ids without one), and whether more follow.
    func page(after cursor: String?, limit: Int) -> (ids: [String], more: Bool) {
        var chunkIndex = 0
        var position = 0
        if let cursor {
            chunkIndex = Self.lowerBound(chunks.count) { chunks[$0].last! <= cursor }
            if chunkIndex < chunks.count {
                position = Self.lowerBound(chunks[chunkIndex].count) { chunks[chunkIndex][$0] <= cursor }
            }
        }
        var ids: [String] = []
        ids.reserveCapacity(min(limit, count))
        while chunkIndex < chunks.count {
            let chunk = chunks[chunkIndex]
            while position < chunk.count {
                if ids.count == limit { return (ids, true) }
                ids.append(chunk[position])
                position += 1
            }
            chunkIndex += 1
            position = 0
        }
        return (ids, false)
    }

    /// The first index in `0..<count` for which `isBefore` is false (binary search).
    private static func lowerBound(_ count: Int, _ isBefore: (Int) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if isBefore(middle) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
