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
    public init(_ text: String) throws(CoreError) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty, parts.count <= Self.maxComponents else {
            throw Self.invalid(text, text.isEmpty ? "it is empty" : "it has more than \(Self.maxComponents) components")
        }
        var components: [Component] = []
        components.reserveCapacity(parts.count)
        var operatorIndex: Int?
        for (index, part) in parts.enumerated() {
            if part.first == "@" {
                guard let op = CollectionOperator(rawValue: String(part.dropFirst())) else {
                    throw Self.invalid(text, "'\(part)' is not a collection operator")
                }
                guard operatorIndex == nil else { throw Self.invalid(text, "it has more than one collection operator") }
                guard index > 0 else { throw Self.invalid(text, "'\(part)' needs a collection key path before it") }
                operatorIndex = index
                components.append(.collection(op))
            } else {
                guard Names.isValidKey(part) else {
                    throw Self.invalid(text, part.isEmpty ? "it has an empty key" : "'\(part)' is not a valid key")
                }
                components.append(.key(String(part)))
            }
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
