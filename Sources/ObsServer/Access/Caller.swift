import ObservationCore

/// Who a request comes from, as `AuthMiddleware` resolved its credential (section 9, 13).
enum Caller: Sendable {
    /// The admin token, or any request on a server without one.
    case admin
    /// An observer's own token; `access`: what the token that made the observer may do (nil:
    /// the admin made it), `reader` its filter.
    case observer(id: String, access: Access?, reader: ReadFilter?)
    /// A stored scoped token or a verified JWT.
    case scoped(ScopedCaller)

    /// What commands carry for the core to decide with (nil: the admin).
    var principal: Principal? {
        switch self {
        case .admin: nil
        case .observer(let id, _, _): .observer(id)
        case .scoped(let scoped): scoped.principal
        }
    }

    /// What the caller may do, when it is limited by scopes.
    var access: Access? {
        switch self {
        case .admin: nil
        case .observer(_, let access, _): access
        case .scoped(let scoped): scoped.access
        }
    }

    /// The client name its writes carry (a token's `client`, a JWT's `sub`).
    var client: String? {
        switch self {
        case .admin: nil
        case .observer(_, let access, _): access?.client
        case .scoped(let scoped): scoped.access.client
        }
    }

    /// Who it is, as idempotency keys tell callers apart: `admin`, `observer <id>`, `token <id>`.
    var identity: String {
        switch self {
        case .admin: "admin"
        case .observer(let id, _, _): "observer \(id)"
        case .scoped(let scoped): "token \(scoped.access.tokenID)"
        }
    }

    /// What its reads may show (nil: everything).
    var reader: ReadFilter? {
        switch self {
        case .admin: nil
        case .observer(_, _, let reader): reader
        case .scoped(let scoped): scoped.reader
        }
    }
}

/// A scoped token's or JWT's caller, resolved once and shared by reference: a request copies
/// its caller several times (context, route, command), and a copy is then one retain.
final class ScopedCaller: Sendable {
    let access: Access
    let reader: ReadFilter
    /// What its commands carry.
    let principal: Principal

    init(_ access: Access, reader: ReadFilter) {
        self.access = access
        self.reader = reader
        principal = access.kind == .jwt ? .jwt(access) : .token(access.tokenID)
    }
}
