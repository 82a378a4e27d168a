/// A computed property's definition: a string template or a key path.
public enum Computed: Sendable, Equatable {
    /// One piece of a template.
    public enum Part: Sendable, Equatable {
        case literal(String)
        case keyPath(KeyPath)
    }

    /// `"{firstName} {lastName}"`: placeholders are key paths, rendered as text.
    case template([Part], source: String)
    /// `"employees.@sum.salary"`: the value at a key path.
    case keyPath(KeyPath)

    /// Parses a definition: text with `{` is a template, anything else a key path.
    init(_ source: String, property: String) throws(CoreError) {
        guard source.contains("{") || source.contains("}") else {
            self = .keyPath(try KeyPath(source))
            return
        }
        var parts: [Part] = []
        var literal = ""
        var rest = Substring(source)
        while let open = rest.firstIndex(where: { $0 == "{" || $0 == "}" }) {
            guard rest[open] == "{", let close = rest[open...].firstIndex(of: "}") else {
                throw CoreError(.invalidRequest, "computed '\(property)': unbalanced braces in template '\(source)'")
            }
            literal += rest[..<open]
            if !literal.isEmpty { parts.append(.literal(literal)) }
            literal = ""
            parts.append(.keyPath(try KeyPath(String(rest[rest.index(after: open)..<close]))))
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { parts.append(.literal(literal)) }
        self = .template(parts, source: source)
    }

    /// The key paths this definition reads.
    public var keyPaths: [KeyPath] {
        switch self {
        case .keyPath(let path): [path]
        case .template(let parts, _):
            parts.compactMap { if case .keyPath(let path) = $0 { path } else { nil } }
        }
    }

    /// The definition as clients wrote it.
    public var source: String {
        switch self {
        case .keyPath(let path): path.description
        case .template(_, let source): source
        }
    }
}
