/// The declared type of a class property. `null` is accepted for every type.
public indirect enum PropertyType: Sendable, Equatable {
    case string, number, integer, boolean, object, any
    /// An array, optionally with a type for its elements.
    case array(items: PropertyType?)
    /// A reference (`{"$ref": id}`), optionally to objects of one class.
    case ref(className: String?)

    /// Parses a type description such as `{"type": "array", "items": {"type": "ref", "class": "Employee"}}`.
    init(_ description: JSONObject, at path: String) throws(CoreError) {
        guard case .string(let name)? = description["type"] else {
            throw CoreError(
                .invalidRequest,
                "\(path): 'type' is required (string, number, integer, boolean, object, array, ref, any)")
        }
        switch name {
        case "string": self = .string
        case "number": self = .number
        case "integer": self = .integer
        case "boolean": self = .boolean
        case "object": self = .object
        case "any": self = .any
        case "array":
            switch description["items"] {
            case nil, .null?: self = .array(items: nil)
            case .object(let items)?: self = .array(items: try PropertyType(items, at: "\(path).items"))
            default: throw CoreError(.invalidRequest, "\(path).items must be a type description object")
            }
        case "ref":
            switch description["class"] {
            case nil, .null?: self = .ref(className: nil)
            case .string(let className)?:
                try Names.checkID(className, "class name")
                self = .ref(className: className)
            default: throw CoreError(.invalidRequest, "\(path).class must be a class name")
            }
        default:
            throw CoreError(
                .invalidRequest, "\(path): unknown type '\(name)'",
                details: Suggestion.closest(to: name, in: Self.names).map { ["suggestion": .string($0)] } ?? [:])
        }
    }

    static let names = ["string", "number", "integer", "boolean", "object", "array", "ref", "any"]

    /// Whether `value` has this type, ignoring a ref's class (the store checks that).
    public func accepts(_ value: JSON) -> Bool {
        switch (self, value) {
        case (_, .null), (.any, _): true
        case (.string, .string), (.boolean, .bool), (.number, .int), (.number, .double), (.integer, .int): true
        case (.integer, .double(let number)): number.rounded() == number && abs(number) < 9.0e15
        case (.object, .object): value.referencedID == nil
        case (.ref, .object): value.referencedID != nil
        case (.array(let items), .array(let elements)): items.map { type in elements.allSatisfy(type.accepts) } ?? true
        default: false
        }
    }

    /// The type description as JSON, as clients wrote it.
    public var json: JSONObject {
        switch self {
        case .string: ["type": "string"]
        case .number: ["type": "number"]
        case .integer: ["type": "integer"]
        case .boolean: ["type": "boolean"]
        case .object: ["type": "object"]
        case .any: ["type": "any"]
        case .array(let items): items.map { ["type": "array", "items": .object($0.json)] } ?? ["type": "array"]
        case .ref(let className): className.map { ["type": "ref", "class": .string($0)] } ?? ["type": "ref"]
        }
    }

    /// The name used in messages: `string`, `array of ref`, …
    public var name: String {
        switch self {
        case .array(let items?): "array of \(items.name)"
        case .ref(let className?): "ref to \(className)"
        default: json["type"].flatMap { if case .string(let s) = $0 { s } else { nil } } ?? "any"
        }
    }
}
