/// A query's members (or a class's objects, `OrderIndex`) in the query's order (`SortedChunks`
/// of their keys): a member's position is what a write needs to know whether it touched the
/// window, and it stops counting as soon as it is known to be past it.
typealias OrderedMembers = SortedChunks<MemberOrder>

extension SortedChunks where Order == MemberOrder {
    init(order: MemberOrder) { self.init(order: order, maxChunk: 256) }

    /// The first `count` members in order.
    func prefix(_ count: Int) -> [MemberKey] { page(after: nil, limit: count).elements }
}
