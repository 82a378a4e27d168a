/// The members of a JSON object, in insertion order.
///
/// Lookup is by hash; order is kept for output, so what a client wrote reads
/// back in the same order. Equality ignores order, as JSON's does.
public struct JSONObject: Sendable {
    public private(set) var keys: [String] = []
    private var storage: [String: JSON] = [:]

    public init() {}

    /// An object from `pairs`; a repeated key keeps its first position and last value.
    public init(_ pairs: some Sequence<(String, JSON)>) {
        for (key, value) in pairs { self[key] = value }
    }

    public var count: Int { keys.count }
    public var isEmpty: Bool { keys.isEmpty }

    /// The member named `key`; assigning `nil` removes it.
    public subscript(key: String) -> JSON? {
        get { storage[key] }
        set {
            if let newValue {
                if storage.updateValue(newValue, forKey: key) == nil { keys.append(key) }
            } else if storage.removeValue(forKey: key) != nil, let index = keys.firstIndex(of: key) {
                keys.remove(at: index)
            }
        }
    }

    /// Changes the member `key` in place; the member must exist.
    mutating func modify<T>(_ key: String, _ body: (inout JSON) throws(CoreError) -> T) throws(CoreError) -> T {
        guard storage[key] != nil else { throw CoreError(.invalidKeyPath, "no value at '\(key)'") }
        return try body(&storage[key, default: .null])
    }
}

extension JSONObject: Sequence {
    public func makeIterator() -> some IteratorProtocol<(key: String, value: JSON)> {
        var index = 0
        let keys = keys
        let storage = storage
        return AnyIterator {
            guard index < keys.count else { return nil }
            defer { index += 1 }
            let key = keys[index]
            return (key, storage[key] ?? .null)
        }
    }
}

extension JSONObject: Hashable {
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool { lhs.storage == rhs.storage }
    public func hash(into hasher: inout Hasher) { hasher.combine(storage) }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, JSON)...) { self.init(elements) }
}
