/// Who made a command or asks for a read (sections 9, 13): the core decides every action with
/// it (`Authorization.decide`) when the command is applied, so a revocation applied first
/// always wins. Never absent: the admin is a value like any other.
public enum Principal: Sendable, Hashable {
    /// The admin token, or any request on a server without one.
    case admin
    /// The server itself: background changes (leases, queued postings, throttles, token
    /// expiry, streams opening and closing, restarts, a node's death), never a client's.
    case server
    /// A stored scoped token, by id (its scopes are the state's, as of the command).
    case token(String)
    /// A verified JWT: its scopes travel in the command (the server never stored them).
    case jwt(Access)
    /// An observer's own token (section 9), by observer id: as much as the token that made
    /// the observer, and never beyond that observer.
    case observer(String)
    /// A request no credential was resolved for (the open routes): refused everything else.
    case nobody

    /// `{"token": id}`, `{"observer": id}` or `{"jwt": {…its access…}}`; nil for the admin and
    /// the server, which commands leave out (`Command(decoding:)` tells them apart by action).
    var json: JSON? {
        switch self {
        case .admin, .server: nil
        case .token(let id): ["token": .string(id)]
        case .observer(let id): ["observer": .string(id)]
        case .jwt(let access): ["jwt": access.json]
        case .nobody: ["nobody": true]
        }
    }

    init?(json: JSON) {
        guard case .object(let members) = json, members.count == 1 else { return nil }
        if members["nobody"] == true {
            self = .nobody
            return
        }
        switch (members["token"], members["observer"], members["jwt"]) {
        case (.string(let id)?, nil, nil): self = .token(id)
        case (nil, .string(let id)?, nil): self = .observer(id)
        case (nil, nil, let access?):
            guard let access = Access(json: access) else { return nil }
            self = .jwt(access)
        default: return nil
        }
    }
}

extension Access {
    /// `{"id", "kind", "scopes", "client"?, "expiresAt"?}` (commands and stored observers).
    var json: JSON {
        .object(
            JSONObject([("id", .string(tokenID)), ("kind", .string(kind.rawValue)), ("scopes", grant.json)])
                .adding("client", client.map(JSON.string))
                .adding("expiresAt", expiresAt.map { .int(Int($0.milliseconds)) }))
    }

    convenience init?(json: JSON) {
        guard case .object(let members) = json, case .string(let id)? = members["id"],
            case .string(let kindName)? = members["kind"], let kind = Kind(rawValue: kindName),
            let scopes = members["scopes"], let grant = try? AccessGrant(parsing: scopes)
        else { return nil }
        var client: String?
        if case .string(let name)? = members["client"] { client = name }
        var expiresAt: Timestamp?
        if case .int(let milliseconds)? = members["expiresAt"] {
            expiresAt = Timestamp(milliseconds: Int64(milliseconds))
        }
        self.init(tokenID: id, kind: kind, grant: grant, client: client, expiresAt: expiresAt)
    }
}
