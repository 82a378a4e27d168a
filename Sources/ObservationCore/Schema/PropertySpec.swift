/// One property of a class: its type, notify policy, and, when computed, its definition.
public struct PropertySpec: Sendable, Equatable {
    public let type: PropertyType
    public let notify: NotifyPolicy
    public let computed: Computed?
    /// Key paths whose changes affect this property (`keyPathsForValuesAffectingValueForKey:`).
    public let dependsOn: [KeyPath]

    init(_ definition: JSON, name: String) throws(CoreError) {
        let context = "property '\(name)'"
        guard case .object(let members) = definition else {
            throw CoreError(.invalidRequest, "\(context) must be an object like {\"type\": \"string\"}")
        }
        let allowed = ["type", "items", "class", "notify", "computed", "dependsOn"]
        for key in members.keys where !allowed.contains(key) {
            throw CoreError.unknownField(key, in: context, allowed: allowed)
        }
        type = try PropertyType(members, at: context)
        switch members["notify"] {
        case nil: notify = .always
        case .string(let raw)?:
            guard let policy = NotifyPolicy(rawValue: raw) else {
                throw CoreError(.invalidRequest, "\(context): notify must be always, onChange or manual")
            }
            notify = policy
        default: throw CoreError(.typeMismatch, "\(context): notify must be a string")
        }
        switch members["computed"] {
        case nil, .null?: computed = nil
        case .string(let source)?: computed = try Computed(source, property: name)
        default: throw CoreError(.typeMismatch, "\(context): computed must be a string")
        }
        switch members["dependsOn"] {
        case nil, .null?: dependsOn = []
        case .array(let paths)?:
            var parsed: [KeyPath] = []
            for path in paths {
                guard case .string(let text) = path else {
                    throw CoreError(.typeMismatch, "\(context): dependsOn must be an array of key paths")
                }
                parsed.append(try KeyPath(text))
            }
            guard computed != nil || parsed.isEmpty else {
                throw CoreError(.invalidRequest, "\(context): dependsOn needs a computed definition")
            }
            dependsOn = parsed
        default: throw CoreError(.typeMismatch, "\(context): dependsOn must be an array of key paths")
        }
    }

    /// The definition as JSON, as clients wrote it.
    public var json: JSONObject {
        var members = type.json
        if notify != .always { members["notify"] = .string(notify.rawValue) }
        if let computed { members["computed"] = .string(computed.source) }
        if !dependsOn.isEmpty { members["dependsOn"] = .array(dependsOn.map { .string($0.description) }) }
        return members
    }
}

extension CoreError {
    /// A request member that is not one of `allowed`, with a suggestion when one is close.
    public static func unknownField(_ field: String, in context: String, allowed: [String]) -> CoreError {
        var message = "\(context): unknown field '\(field)'"
        var details: JSONObject = ["field": .string(field)]
        if let suggestion = Suggestion.closest(to: field, in: allowed) {
            message += "; did you mean '\(suggestion)'?"
            details["suggestion"] = .string(suggestion)
        }
        return CoreError(.invalidRequest, message, details: details)
    }
}
