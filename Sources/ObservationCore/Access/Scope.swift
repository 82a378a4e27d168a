/// One scope of a token (section 13): the actions it allows on what it matches.
///
/// Object actions match an object by `class` (exact), `ids` (a glob) and `owned` (its owner is
/// an observer made with the token), all that are given; name actions match a notification
/// name by `names` (absent: any name). Choice: a scope that allows an object action needs one
/// of `class`, `ids`, `owned` (a scope of `names` alone allows nothing on objects, and one
/// that allowed `read` would otherwise read every object).
///
/// Immutable, shared by reference: every scoped command tests its token's scopes, and a
/// reference is one retain where a copy of the struct retained each selector.
public final class Scope: Sendable, Hashable {
    public let allow: AccessActions
    public let className: String?
    public let ids: Glob?
    public let owned: Bool
    public let names: Glob?

    static let fields = ["allow", "class", "ids", "owned", "names"]
    static let maxScopes = 32

    /// Parses and checks one scope; throws `invalidRequest` (or `invalidName`) for any flaw.
    init(_ json: JSON, at index: Int) throws(CoreError) {
        guard case .object(let members) = json else {
            throw Self.invalid(index, "must be an object, not \(json.typeNameWithArticle)")
        }
        for (key, _) in members where !Self.fields.contains(key) {
            throw Self.invalid(index, "has no field '\(key)' (allowed: \(Self.fields.joined(separator: ", ")))")
        }
        guard case .array(let actions)? = members["allow"], !actions.isEmpty else {
            throw Self.invalid(index, "needs allow: a non-empty list of actions")
        }
        var allow = AccessActions()
        for action in actions {
            guard case .string(let name) = action, let parsed = AccessAction(rawValue: name) else {
                let known = AccessAction.allCases.map(\.rawValue).joined(separator: ", ")
                throw Self.invalid(index, "allows an unknown action \(action) (known: \(known))")
            }
            allow = AccessActions(allow.list + [parsed])
        }
        self.allow = allow
        switch members["class"] {
        case nil, .null?: className = nil
        case .string(let name)? where Names.isValidID(name): className = name
        case let other?: throw Self.invalid(index, "class must be a class name, not \(other)")
        }
        ids = try Self.glob(members["ids"], "ids", index, maxLength: 128) { scalar in
            scalar.isASCII && Names.isValidID(String(scalar))
        }
        names = try Self.glob(members["names"], "names", index, maxLength: 256) { scalar in
            !scalar.properties.generalCategory.isControl
        }
        switch members["owned"] {
        case nil, .null?, .bool(false)?: owned = false
        case .bool(true)?: owned = true
        case let other?: throw Self.invalid(index, "owned must be true or false, not \(other)")
        }
        guard className != nil || ids != nil || owned || names != nil else {
            throw Self.invalid(
                index, "needs one of class, ids, owned, names (grant everything with the admin token, not a pattern)")
        }
        if className == nil, ids == nil, !owned, let action = allow.list.first(where: \.isObjectAction) {
            throw Self.invalid(index, "allows \(action.rawValue), which acts on objects: it needs class, ids or owned")
        }
    }

    private static func glob(
        _ value: JSON?, _ field: String, _ index: Int, maxLength: Int, allowed: (Unicode.Scalar) -> Bool
    ) throws(CoreError) -> Glob? {
        switch value {
        case nil, .null?: return nil
        case .string(let pattern)?:
            guard let glob = Glob(pattern, maxLength: maxLength, allowed: allowed) else {
                throw invalid(index, "\(field) '\(pattern.prefix(140))' is not a valid pattern")
            }
            return glob
        case let other?: throw invalid(index, "\(field) must be a pattern string, not \(other.typeNameWithArticle)")
        }
    }

    static func invalid(_ index: Int, _ reason: String) -> CoreError {
        CoreError(.invalidRequest, "scopes[\(index)] \(reason)", details: ["field": .string("scopes[\(index)]")])
    }

    /// Whether it allows `action` on an object with this id and class, owned by `ownerToken`
    /// (the token that made its owner), for a token with id `tokenID`.
    func allows(_ action: AccessAction, id: String, objectClass: String?, ownerToken: String?, tokenID: String)
        -> Bool
    {
        guard allow.contains(action), action.isObjectAction else { return false }
        if let className, className != objectClass { return false }
        if owned, ownerToken == nil || ownerToken != tokenID { return false }
        if let ids, !ids.matches(id) { return false }
        return className != nil || ids != nil || owned
    }

    /// Whether it allows `action` on a notification named `name` (nil: on every name).
    func allows(_ action: AccessAction, name: String?) -> Bool {
        guard allow.contains(action), !action.isObjectAction else { return false }
        guard let names else { return true }
        return name.map(names.matches) ?? false
    }

    public static func == (a: Scope, b: Scope) -> Bool {
        a.allow == b.allow && a.className == b.className && a.ids == b.ids && a.owned == b.owned
            && a.names == b.names
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(allow)
        hasher.combine(className)
        hasher.combine(ids)
    }

    /// As clients see it (`allow` in the contract's order, absent selectors left out).
    public var json: JSON {
        var members: JSONObject = ["allow": .array(allow.list.map { .string($0.rawValue) })]
        if let className { members["class"] = .string(className) }
        if let ids { members["ids"] = .string(ids.pattern) }
        if owned { members["owned"] = .bool(true) }
        if let names { members["names"] = .string(names.pattern) }
        return .object(members)
    }
}
