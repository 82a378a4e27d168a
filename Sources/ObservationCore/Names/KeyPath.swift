/// A parsed key path: keys joined by `.`, with at most one collection operator.
///
/// `employees.@count`, `transactions.@sum.amount`, `owner.name`. Parsing
/// checks the syntax of section 1 only; whether the keys exist is a question
/// for the object's class (see `ClassSchema`).
public struct KeyPath: Sendable, Hashable, CustomStringConvertible {
    /// One step of a path.
    public enum Component: Sendable, Hashable {
        case key(String)
        case collection(CollectionOperator)
    }

    /// The most components a path may have.
    public static let maxComponents = 32

    public let components: [Component]
    public let description: String

    /// Parses `text`, throwing `invalidKeyPath` with the reason when it breaks a rule.
    /// On every write and read, so it scans the bytes once, splitting at `.`.
    public init(_ text: String) throws(CoreError) {
        guard !text.isEmpty else { throw Self.invalid(text, "it is empty") }
        // Most paths are one key: checked whole, nothing split or copied.
        if Names.isValidKey(text) {
            components = [.key(text)]
            description = text
            return
        }
        let utf8 = text.utf8
        var components: [Component] = []
        var operatorIndex: Int?
        var start = utf8.startIndex
        while true {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: ".")) ?? utf8.endIndex
            guard components.count < Self.maxComponents else {
                throw Self.invalid(text, "it has more than \(Self.maxComponents) components")
            }
            let part = Substring(utf8[start..<end])
            if part.utf8.first == UInt8(ascii: "@") {
                guard let op = CollectionOperator(rawValue: String(Substring(part.utf8.dropFirst()))) else {
                    throw Self.invalid(text, "'\(part)' is not a collection operator")
                }
                guard operatorIndex == nil else { throw Self.invalid(text, "it has more than one collection operator") }
                guard !components.isEmpty else {
                    throw Self.invalid(text, "'\(part)' needs a collection key path before it")
                }
                operatorIndex = components.count
                components.append(.collection(op))
            } else {
                guard Names.isValidKey(part) else {
                    throw Self.invalid(text, part.isEmpty ? "it has an empty key" : "'\(part)' is not a valid key")
                }
                components.append(.key(String(part)))
            }
            guard end != utf8.endIndex else { break }
            start = utf8.index(after: end)
        }
        if let operatorIndex, case .collection(let op) = components[operatorIndex] {
            let after = components.count - operatorIndex - 1
            if op == .count, after > 0 { throw Self.invalid(text, "@count must end the key path") }
            if op != .count, after == 0 {
                throw Self.invalid(text, "@\(op.rawValue) needs the key path it applies to after it")
            }
        }
        self.components = components
        self.description = text
    }

    /// Whether a component is a collection operator (such a path can be read, not set).
    public var hasCollectionOperator: Bool {
        components.contains { component in
            guard case .collection = component else { return false }
            return true
        }
    }

    /// The keys, when the path has no collection operator.
    public var keys: [String]? {
        var keys: [String] = []
        for component in components {
            guard case .key(let key) = component else { return nil }
            keys.append(key)
        }
        return keys
    }

    private static func invalid(_ text: String, _ reason: String) -> CoreError {
        CoreError(
            .invalidKeyPath, "invalid key path '\(text.prefix(200))': \(reason)",
            details: ["keyPath": .string(String(text.prefix(200)))])
    }
}

/// KVC's collection operators.
public enum CollectionOperator: String, Sendable, Hashable, CaseIterable {
    case count, sum, avg, min, max, distinctUnionOfObjects, unionOfObjects
}
