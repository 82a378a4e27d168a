/// A query's matching objects in its order, as sorted chunks of bounded size: inserting or
/// removing one moves at most a chunk's worth of keys, finding one is two binary searches,
/// and its position takes the counts of the chunks before it (stopping as soon as it is
/// known to be past the window: what a write needs to know is whether it touched the window).
struct OrderedMembers: Sendable {
    private static let maxChunk = 256
    let order: MemberOrder
    private var chunks: [[MemberKey]] = []
    private(set) var count = 0

    init(order: MemberOrder) { self.order = order }

    mutating func insert(_ key: MemberKey) {
        guard !chunks.isEmpty else {
            chunks = [[key]]
            count = 1
            return
        }
        let chunk = min(chunkIndex(for: key), chunks.count - 1)
        let position = lowerBound(in: chunks[chunk], key)
        chunks[chunk].insert(key, at: position)
        count += 1
        if chunks[chunk].count > Self.maxChunk {
            let upper = Array(chunks[chunk][(Self.maxChunk / 2)...])
            chunks[chunk].removeLast(upper.count)
            chunks.insert(upper, at: chunk + 1)
        }
    }

    mutating func remove(_ key: MemberKey) {
        guard let (chunk, position) = find(key) else { return }
        chunks[chunk].remove(at: position)
        count -= 1
        if chunks[chunk].isEmpty { chunks.remove(at: chunk) }
    }

    /// The position of `key` when it is a member before `limit`; nil when it is not a member
    /// or stands at `limit` or after.
    func position(of key: MemberKey, below limit: Int) -> Int? {
        guard let (chunk, position) = find(key) else { return nil }
        var before = position
        for index in 0..<chunk {
            before += chunks[index].count
            if before >= limit { return nil }
        }
        return before < limit ? before : nil
    }

    /// The first `count` members in order.
    func prefix(_ count: Int) -> [MemberKey] {
        var keys: [MemberKey] = []
        keys.reserveCapacity(min(count, self.count))
        for chunk in chunks {
            for key in chunk {
                if keys.count == count { return keys }
                keys.append(key)
            }
        }
        return keys
    }

    /// Calls `body` with the members after `key` (all of them when nil), in order, until it returns false.
    func forEach(after key: MemberKey?, _ body: (MemberKey) -> Bool) {
        var chunk = 0
        var position = 0
        if let key {
            chunk = chunkIndex(after: key)
            guard chunk < chunks.count else { return }
            position = upperBound(in: chunks[chunk], key)
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

    /// The first chunk whose last key comes after `key`.
    private func chunkIndex(after key: MemberKey) -> Int {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if !order.precedes(key, chunks[middle][chunks[middle].count - 1]) {
                low = middle + 1
            } else {
                high = middle
            }
        }
        return low
    }

    /// The first position in `chunk` whose key comes after `key`.
    private func upperBound(in chunk: [MemberKey], _ key: MemberKey) -> Int {
        var low = 0
        var high = chunk.count
        while low < high {
            let middle = (low + high) / 2
            if !order.precedes(key, chunk[middle]) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func find(_ key: MemberKey) -> (Int, Int)? {
        guard !chunks.isEmpty else { return nil }
        let chunk = chunkIndex(for: key)
        guard chunk < chunks.count else { return nil }
        let position = lowerBound(in: chunks[chunk], key)
        guard position < chunks[chunk].count, chunks[chunk][position] == key else { return nil }
        return (chunk, position)
    }

    /// The first chunk whose last key does not precede `key`.
    private func chunkIndex(for key: MemberKey) -> Int {
        var low = 0
        var high = chunks.count
        while low < high {
            let middle = (low + high) / 2
            if order.precedes(chunks[middle][chunks[middle].count - 1], key) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func lowerBound(in chunk: [MemberKey], _ key: MemberKey) -> Int {
        var low = 0
        var high = chunk.count
        while low < high {
            let middle = (low + high) / 2
            if order.precedes(chunk[middle], key) { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
