import ObservationCore

/// Who a request comes from, as `AuthMiddleware` resolved its credential (section 9, 13).
enum Caller: Sendable {
    /// The admin token, or any request on a server without one.
    case admin
    /// An observer's own token; `access`: what the token that made the observer may do (nil:
    /// the admin made it), `reader` its filter.
    case observer(id: String, access: Access?, reader: ReadFilter?)
    /// A stored scoped token or a verified JWT.
    case scoped(Access, reader: ReadFilter)

    /// What commands carry for the core to decide with (nil: the admin).
    var principal: Principal? {
        switch self {
        case .admin: nil
        case .observer(let id, _, _): .observer(id)
        case .scoped(let access, _): access.kind == .jwt ? .jwt(access) : .token(access.tokenID)
        }
    }

    /// What the caller may do, when it is limited by scopes.
    var access: Access? {
        switch self {
        case .admin: nil
        case .observer(_, let access, _): access
        case .scoped(let access, _): access
        }
    }

    /// Who it is, as idempotency keys tell callers apart: `admin`, `observer <id>`, `token <id>`.
    var identity: String {
        switch self {
        case .admin: "admin"
        case .observer(let id, _, _): "observer \(id)"
        case .scoped(let access, _): "token \(access.tokenID)"
        }
    }

    /// What its reads may show (nil: everything).
    var reader: ReadFilter? {
        switch self {
        case .admin: nil
        case .observer(_, _, let reader): reader
        case .scoped(_, let reader): reader
        }
    }
}
