import ObservationCore

/// Who a request comes from, as `AuthMiddleware` resolved its credential (section 9, 13).
/// Never absent: a request no credential was resolved for is `nobody`, refused everything.
enum Caller: Sendable {
    /// The admin token, or any request on a server without one.
    case admin
    /// An observer's own token; `access`: what the token that made the observer may do (nil:
    /// the admin made it).
    case observer(id: String, access: Access?)
    /// A stored scoped token or a verified JWT.
    case scoped(ScopedCaller)
    /// No credential resolved (the open routes: health, the OpenAPI document, static files).
    case nobody

    /// What its commands and reads carry for the core to decide with.
    var principal: Principal {
        switch self {
        case .admin: .admin
        case .observer(let id, _): .observer(id)
        case .scoped(let scoped): scoped.principal
        case .nobody: .nobody
        }
    }

    /// What the caller may do, when it is limited by scopes.
    var access: Access? {
        switch self {
        case .admin, .nobody: nil
        case .observer(_, let access): access
        case .scoped(let scoped): scoped.access
        }
    }

    /// Who it is, as idempotency keys tell callers apart: `admin`, `observer <id>`, `token <id>`.
    var identity: String {
        switch self {
        case .admin: "admin"
        case .observer(let id, _): "observer \(id)"
        case .scoped(let scoped): "token \(scoped.access.tokenID)"
        case .nobody: "nobody"
        }
    }
}

/// A scoped token's or JWT's caller, resolved once and shared by reference: a request copies
/// its caller several times (context, route, command), and a copy is then one retain.
final class ScopedCaller: Sendable {
    let access: Access
    /// What its commands carry.
    let principal: Principal

    init(_ access: Access) {
        self.access = access
        principal = access.kind == .jwt ? .jwt(access) : .token(access.tokenID)
    }
}
