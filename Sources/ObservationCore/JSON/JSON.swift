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
    /// A bound on what holding this value takes, with the compact text it is encoded to when
    /// read, without writing it: the text (exact but for escapes; numbers at their widest)
    /// plus the parsed tree, each container's storage at up to twice its count (an array's
    /// 24-byte slots, an object's 40-byte members, at least four, and its hash index past 16)
    /// and each string too long to be kept inline (over 15 bytes) on the heap. For holding a
    /// value in the place of its encoding where a byte limit applies.
    var estimatedBytes: Int {
        switch self {
        case .null: 4
        case .bool: 5
        case .int: 20
        case .double: 24
        case .string(let text): Self.estimatedBytes(of: text)
        case .array(let elements):
            elements.reduce(1 + elements.count + 32 + 48 * elements.count) { $0 + $1.estimatedBytes }
        case .object(let members):
            1 + members.count + 32 + 40 * max(4, 2 * members.count) + (members.count > 16 ? 48 * members.count : 0)
                + members.estimatedMemberBytes
        }
    }

    /// A string's quoted text, and its heap storage when it is too long to be kept inline.
    static func estimatedBytes(of text: String) -> Int {
        let count = text.utf8.count
        return count + 2 + (count > 15 ? 48 + count : 0)
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

    /// `typeName` as a sentence says it: "an array", "a string", "null".
    public var typeNameWithArticle: String {
        isNull ? "null" : withArticle(typeName)
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

extension JSON {
    /// Whether the two are written as the same text: `==` but for the spelling JSON equality
    /// ignores (`1` against `1.0`, members in another order, strings equal as Unicode but not
    /// as bytes). What one value's encoding may stand for the other's (a shared record tail).
    func encodesLike(_ other: JSON) -> Bool {
        switch (self, other) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int(let a), .int(let b)): a == b
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.string(let a), .string(let b)): Self.sameBytes(a, b)
        case (.array(let a), .array(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.encodesLike($1) }
        case (.object(let a), .object(let b)): a.encodesLike(b)
        default: false
        }
    }

    /// Whether the two strings are the same bytes: at once when they share their storage (a value
    /// shared by every registration on it, however long), else compared eight bytes at a time.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let compared = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in
                Self.sameBytes(UnsafeRawBufferPointer(x), UnsafeRawBufferPointer(y))
            }
        }
        return (compared ?? nil) ?? a.utf8.elementsEqual(b.utf8)
    }

    private static func sameBytes(_ x: UnsafeRawBufferPointer, _ y: UnsafeRawBufferPointer) -> Bool {
        guard x.count == y.count else { return false }
        guard let p = x.baseAddress, let q = y.baseAddress, p != q else { return true }
        var offset = 0
        while offset + 8 <= x.count {
            let (left, right) = (
                p.loadUnaligned(fromByteOffset: offset, as: UInt64.self),
                q.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            )
            guard left == right else { return false }
            offset += 8
        }
        while offset < x.count {
            guard x[offset] == y[offset] else { return false }
            offset += 1
        }
        return true
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

/// `noun` after "a" or "an" as it is said: "an array", "an integer", "a string".
public func withArticle(_ noun: String) -> String {
    guard let first = noun.first, "aeiouAEIOU".contains(first) else { return "a \(noun)" }
    return "an \(noun)"
}
