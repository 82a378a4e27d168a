/// The members of a JSON object, in insertion order.
///
/// Most objects are small, so members live in one array and are found by a
/// linear scan; past `indexThreshold` members a hash index is kept beside it.
/// Order is kept for output, so what a client wrote reads back in the same
/// order. Equality ignores order, as JSON's does.
public struct JSONObject: Sendable {
    static let indexThreshold = 16

    private var members: [(key: String, value: JSON)] = []
    /// Positions in `members` by key, once there are more than `indexThreshold`.
    private var index: [String: Int]?

    public init() {}

    /// An object from `pairs`; a repeated key keeps its first position and last value.
    public init(_ pairs: some Sequence<(String, JSON)>) {
        members.reserveCapacity(pairs.underestimatedCount)
        for (key, value) in pairs { self[key] = value }
    }

    public var count: Int { members.count }

    mutating func reserveCapacity(_ count: Int) { members.reserveCapacity(count) }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    /// The member named `key`; assigning `nil` removes it.
    public subscript(key: String) -> JSON? {
        get { position(of: key).map { members[$0].value } }
        set {
            switch (position(of: key), newValue) {
            case (let position?, let value?):
                members[position].value = value
            case (nil, let value?):
                members.append((key, value))
                if index != nil {
                    index?[key] = members.count - 1
                } else if members.count > Self.indexThreshold {
                    rebuildIndex()
                }
            case (let position?, nil):
                members.remove(at: position)
                if index != nil { rebuildIndex() }
            case (nil, nil):
                break
            }
        }
    }

    /// `JSON.estimatedBytes` of the members (each name quoted, its colon, its value), read where
    /// they are: iterating the object copied each member out, retaining its name and value.
    var estimatedMemberBytes: Int {
        var total = 0
        for index in members.indices {
            total += JSON.estimatedBytes(of: members[index].key) + 1 + members[index].value.estimatedBytes
        }
        return total
    }

    /// Changes the member `key` in place (no copy of its value); nil when it is absent.
    mutating func modify<T>(_ key: String, _ body: (inout JSON) -> T) -> T? {
        guard let position = position(of: key) else { return nil }
        return body(&members[position].value)
    }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return members.firstIndex { $0.key == key }
    }

    private mutating func rebuildIndex() {
        var positions: [String: Int] = [:]
        positions.reserveCapacity(members.count)
        for (position, member) in members.enumerated() { positions[member.key] = position }
        index = positions
    }
}

extension JSONObject {
    /// This object with `key` set to `value`, or unchanged when `value` is nil (an optional member).
    public func adding(_ key: String, _ value: JSON?) -> JSONObject {
        guard let value else { return self }
        var copy = self
        copy[key] = value
        return copy
    }
}

extension JSONObject: Sequence {
    public func makeIterator() -> some IteratorProtocol<(key: String, value: JSON)> {
        members.makeIterator()
    }

    public var underestimatedCount: Int { members.count }
}

extension JSONObject: Hashable {
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.count == rhs.count && (lhs.sharesStorage(with: rhs) || lhs.members.allSatisfy { rhs[$0.key] == $0.value })
    }

    /// Whether the two are written as the same text (`JSON.encodesLike`): the same members in
    /// the same order, each written alike.
    func encodesLike(_ other: JSONObject) -> Bool {
        count == other.count
            && (sharesStorage(with: other)
                || zip(members, other.members).allSatisfy {
                    JSON.sameBytes($0.key, $1.key) && $0.value.encodesLike($1.value)
                })
    }

    /// One storage (a value shared, not rebuilt): equal, and written alike, without a member looked at.
    private func sharesStorage(with other: JSONObject) -> Bool {
        members.withUnsafeBufferPointer { mine in
            other.members.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress }
        }
    }

    public func hash(into hasher: inout Hasher) {
        // Order-independent: a commutative sum of the members' own hashes.
        var sum = 0
        for member in members {
            var memberHasher = Hasher()
            memberHasher.combine(member.key)
            memberHasher.combine(member.value)
            sum &+= memberHasher.finalize()
        }
        hasher.combine(count)
        hasher.combine(sum)
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// `[:]` (a default argument on every write) allocates and reserves nothing.
    public init(dictionaryLiteral elements: (String, JSON)...) {
        if elements.isEmpty { self.init() } else { self.init(elements) }
    }
}
