/// A set of ids kept in ascending order (by their UTF-8 bytes), for cursor paging: a page costs
/// what it holds, not the size of the set (`SortedChunks`).
struct SortedIDs: Sendable {
    private struct Ascending: ChunkOrder {
        func precedes(_ a: String, _ b: String) -> Bool { a < b }
    }

    private var ids = SortedChunks(order: Ascending(), maxChunk: 1024)

    var count: Int { ids.count }

    mutating func insert(_ id: String) { ids.insert(id) }

    mutating func remove(_ id: String) { ids.remove(id) }

    /// Up to `limit` ids greater than `cursor` (all ids without one), and whether more follow.
    func page(after cursor: String?, limit: Int) -> (ids: [String], more: Bool) {
        let page = ids.page(after: cursor, limit: limit)
        return (page.elements, page.more)
    }
}
