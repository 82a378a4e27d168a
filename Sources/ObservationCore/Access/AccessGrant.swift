/// What a scoped token may do: its scopes, which add up (section 13).
public struct AccessGrant: Sendable, Hashable {
    public let scopes: [Scope]
    /// Every action some scope allows.
    public let actions: AccessActions

    /// Parses `scopes` (a JSON array of 1–32 scopes); throws the contract's 400 for any flaw.
    public init(parsing scopes: JSON) throws(CoreError) {
        guard case .array(let items) = scopes, (1...Scope.maxScopes).contains(items.count) else {
            throw CoreError(
                .invalidRequest, "scopes must be a list of 1–\(Scope.maxScopes) scopes", details: ["field": "scopes"])
        }
        var parsed: [Scope] = []
        for (index, item) in items.enumerated() { parsed.append(try Scope(item, at: index)) }
        self.init(parsed)
    }

    init(_ scopes: [Scope]) {
        self.scopes = scopes
        var actions = AccessActions()
        for scope in scopes { actions.formUnion(scope.allow) }
        self.actions = actions
    }

    public var json: JSON { .array(scopes.map(\.json)) }
}

/// A scoped principal as the core decides with it: the token (stored, or a JWT), what it may
/// do, and the client name its writes carry. Immutable, shared by reference: every scoped
/// request and command passes one along (a copy is one retain, not one per field); new scopes
/// make a new one (`with(grant:)`).
public final class Access: Sendable, Hashable {
    public enum Kind: String, Sendable {
        case token, jwt
    }

    /// `tok_…`, or a JWT's `jti`.
    public let tokenID: String
    public let kind: Kind
    public let grant: AccessGrant
    /// `client` (a JWT's `sub`): writes carry it as `by`.
    public let client: String?
    /// When it stops working (a JWT's `exp`; a stored token's is kept in its table).
    public let expiresAt: Timestamp?

    public init(tokenID: String, kind: Kind, grant: AccessGrant, client: String?, expiresAt: Timestamp?) {
        self.tokenID = tokenID
        self.kind = kind
        self.grant = grant
        self.client = client
        self.expiresAt = expiresAt
    }

    /// The same principal with other scopes.
    public func with(grant: AccessGrant) -> Access {
        Access(tokenID: tokenID, kind: kind, grant: grant, client: client, expiresAt: expiresAt)
    }

    /// The same principal with another expiry.
    func with(expiresAt: Timestamp?) -> Access {
        Access(tokenID: tokenID, kind: kind, grant: grant, client: client, expiresAt: expiresAt)
    }

    public static func == (a: Access, b: Access) -> Bool {
        a.tokenID == b.tokenID && a.kind == b.kind && a.grant == b.grant && a.client == b.client
            && a.expiresAt == b.expiresAt
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(tokenID)
        hasher.combine(grant)
    }

    /// The one decision for an action on an object: some scope allows it.
    public func allows(_ action: AccessAction, _ object: ObjectIdentity) -> Bool {
        grant.scopes.contains { scope in
            scope.allows(
                action, id: object.id, objectClass: object.className, ownerToken: object.ownerToken, tokenID: tokenID)
        }
    }

    /// The one decision for an action on a notification name (nil: every name, as a
    /// subscription without one receives).
    public func allows(_ action: AccessAction, name: String?) -> Bool {
        grant.scopes.contains { $0.allows(action, name: name) }
    }

    /// Whether some object with id `id` could be allowed `action` (its class and owner not
    /// known: it does not exist). Refusing an id no scope could match tells nothing of what exists.
    public func mightAllow(_ action: AccessAction, id: String) -> Bool {
        grant.scopes.contains { scope in
            scope.allow.contains(action) && action.isObjectAction && (scope.ids?.matches(id) ?? true)
        }
    }

    /// What its registrations may read (section 13: the rest reads as missing).
    public var readFilter: ReadFilter { ReadFilter(self) }
}

/// What an object is to a scope: id, class and owner never change once it exists, so a
/// verdict on an object holds for as long as the object and the token's scopes do.
public struct ObjectIdentity: Sendable {
    public let id: String
    public let className: String?
    /// The token that made the object's owner (section 14), if it has one.
    public let ownerToken: String?

    public init(id: String, className: String?, ownerToken: String? = nil) {
        self.id = id
        self.className = className
        self.ownerToken = ownerToken
    }
}

/// What a scoped reader sees of the graph: objects its `read` scopes match; along a key path,
/// any other object reads as `null` (as if missing). Shared by reference: registrations and
/// query shapes hold one without copying its scopes. `key` names what it lets through:
/// equal keys read the same objects (query shapes are shared by it).
public final class ReadFilter: Sendable {
    public let key: String
    private let access: Access
    /// Whom it reads for: the token the filter was made from.
    private let principal: Principal

    init(_ access: Access) {
        self.access = access
        principal = access.kind == .jwt ? .jwt(access) : .token(access.tokenID)
        let readScopes = access.grant.scopes.filter { $0.allow.contains(.read) }
        // What each read scope matches, in a fixed order; `owned` depends on the token too.
        let selectors = Set(readScopes.map { "\($0.className ?? "*") \($0.ids?.pattern ?? "*") \($0.owned)" }).sorted()
        let owner = readScopes.contains(where: \.owned) ? " owner=\(access.tokenID)" : ""
        key = selectors.joined(separator: "|") + owner
    }

    public func mayRead(_ object: ObjectIdentity) -> Bool {
        Authorization.decide(.object(.read, object), by: principal, access: access) == .allowed
    }

    /// Whether it reads every object of class `className` (a read scope of that class alone).
    func readsAll(ofClass className: String) -> Bool {
        access.grant.scopes.contains { scope in
            scope.allow.contains(.read) && scope.className == className && scope.ids == nil && !scope.owned
        }
    }
}
