/// A to-many change to an array value, as `NSKeyValueChange` kinds.
///
/// Indexes follow `NSIndexSet`: sorted and distinct. For an insertion they are
/// positions in the resulting array (`insertObjects:atIndexes:`).
public struct ArrayMutation: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case insertion, removal, replacement
    }

    public let kind: Kind
    public let indexes: [Int]
    public let values: [JSON]

    /// Checks the shape: indexes sorted, distinct, non-negative; one value per
    /// index for insertion and replacement, none for removal.
    public init(kind: Kind, indexes: [Int], values: [JSON]) throws(CoreError) {
        guard !indexes.isEmpty else { throw CoreError(.invalidRequest, "indexes must not be empty") }
        for (previous, next) in zip(indexes, indexes.dropFirst()) where previous >= next {
            throw CoreError(.invalidRequest, "indexes must be sorted and distinct, like an NSIndexSet")
        }
        if let first = indexes.first, first < 0 {
            throw CoreError(.indexOutOfRange, "index \(first) is negative", details: ["index": .int(first)])
        }
        switch kind {
        case .removal where !values.isEmpty:
            throw CoreError(.invalidRequest, "a removal takes no values")
        case .insertion where values.count != indexes.count, .replacement where values.count != indexes.count:
            throw CoreError(
                .invalidRequest,
                "\(kind.rawValue) needs one value per index (\(indexes.count) indexes, \(values.count) values)")
        default: break
        }
        self.kind = kind
        self.indexes = indexes
        self.values = values
    }

    /// The array after this mutation, or `indexOutOfRange`.
    public func applied(to array: [JSON]) throws(CoreError) -> [JSON] {
        var result = array
        switch kind {
        case .insertion:
            let finalCount = array.count + indexes.count
            if let last = indexes.last, last >= finalCount { throw outOfRange(last, finalCount) }
            for (index, value) in zip(indexes, values) { result.insert(value, at: index) }
        case .removal:
            if let last = indexes.last, last >= array.count { throw outOfRange(last, array.count) }
            for index in indexes.reversed() { result.remove(at: index) }
        case .replacement:
            if let last = indexes.last, last >= array.count { throw outOfRange(last, array.count) }
            for (index, value) in zip(indexes, values) { result[index] = value }
        }
        return result
    }

    /// The elements at `indexes` in `array` (what the mutation removes or replaces).
    public func affected(in array: [JSON]) -> [JSON] {
        indexes.compactMap { array.indices.contains($0) ? array[$0] : JSON?.none }  // `nil` would be JSON null
    }

    private func outOfRange(_ index: Int, _ count: Int) -> CoreError {
        CoreError(
            .indexOutOfRange, "index \(index) is out of range for \(kind.rawValue) (valid: 0..<\(count))",
            details: ["index": .int(index), "count": .int(count)])
    }
}

extension ArrayMutation {
    /// The members the admin stream's `valueChanged` adds for it: `kind` and `indexes`.
    var adminMembers: JSONObject {
        ["kind": .string(kind.rawValue), "indexes": .array(indexes.map(JSON.int))]
    }
}
