/// A JSON value, as clients send and read it.
///
/// Numbers keep the integer/fraction distinction of their text (`1` is `.int`,
/// `1.0` is `.double`) but compare numerically: `.int(1) == .double(1)`.
/// Objects keep their members in insertion order and compare without regard
/// to it (JSON equality, as the `onChange` notify policy needs).
public enum JSON: Sendable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSON])
    case object(JSONObject)
}

extension JSON {
    /// About the size of this value's compact text, without writing it: exact for text
    /// without escapes, numbers counted at their widest (20 and 24 bytes). For holding a
    /// value in the place of its encoding, where a byte limit applies.
    var estimatedBytes: Int {
        switch self {
        case .null: 4
        case .bool: 5
        case .int: 20
        case .double: 24
        case .string(let text): text.utf8.count + 2
        case .array(let elements): elements.reduce(1 + elements.count) { $0 + $1.estimatedBytes }
        case .object(let members):
            members.reduce(1 + members.count) { $0 + $1.key.utf8.count + 3 + $1.value.estimatedBytes }
        }
    }
}

extension JSON {
    /// The id this value refers to when it is a reference (`{"$ref": "id"}`).
    public var referencedID: String? {
        guard case .object(let members) = self, members.count == 1, case .string(let id)? = members["$ref"] else {
            return nil
        }
        return id
    }

    /// A reference to the object `id`.
    public static func reference(_ id: String) -> JSON {
        .object(JSONObject([("$ref", .string(id))]))
    }

    /// The number as a `Double`, when this is a number.
    public var number: Double? {
        switch self {
        case .int(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// The name of this value's JSON type, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "number"
        case .string: "string"
        case .array: "array"
        case .object: referencedID == nil ? "object" : "ref"
        }
    }
}

extension JSON: Equatable {
    public static func == (lhs: JSON, rhs: JSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.int, .double), (.double, .int), (.double, .double): lhs.number == rhs.number
        case (.string(let a), .string(let b)): a == b
        // Element-wise: Swift 6.3.1 crashes (CopyPropagation) specialising `Array<JSON>.==` in release builds.
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { $0 == $1 }
        case (.object(let a), .object(let b)): a == b
        default: false
        }
    }
}

extension JSON: Hashable {
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .int, .double: hasher.combine(number)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        case .object(let members): hasher.combine(members)
        }
    }
}

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSON)...) { self = .object(JSONObject(elements)) }
}

extension JSON: CustomStringConvertible {
    /// The compact JSON text of this value.
    public var description: String { String(decoding: encoded(), as: UTF8.self) }
}
