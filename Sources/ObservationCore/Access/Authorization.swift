// MARK: - The one authorization decision (sections 9, 13 and 14)

/// A question the authorization decision answers, with every fact it needs: the store gathers
/// them from its state as a command is applied, the middleware from the request and the store.
public enum AccessQuestion: Sendable {
    /// A command before its particulars: a background change (the server's alone) or a client's.
    case command(background: Bool)
    /// Reading objects, classes and queries, through what the caller's scopes let it read.
    case read
    /// An action on an object that exists, or is being created with this identity.
    case object(AccessAction, ObjectIdentity)
    /// An action on an id no object has: allowed when some scope could match the id (the action
    /// then answers 404), so a refusal never tells whether an id outside the scopes exists.
    case missingObject(AccessAction, id: String)
    /// Posting, or subscribing, to a notification name (nil: every name).
    case name(AccessAction, String?)
    /// Using observer `id` (its registrations, stream, lease): `maker` is the token that made it
    /// (nil: the admin); `exists`: whether there is one.
    case observer(id: String, maker: String?, exists: Bool)
    /// Making an observer.
    case makeObserver
    /// Registering a query of class `className` (nil: of any class).
    case query(className: String?)
    /// What only the admin does (`what` names it: "change classes and tokens", "read tokens").
    case adminOnly(String)
    /// A route of the HTTP API, before its command or read is decided again.
    case route(RouteFamily)
    /// Writing as client `name` (`Obs-Client`, section 7.3; nil: none named).
    case client(String?)
}

/// The routes by what they touch: the middleware's first look at a request (section 13).
public enum RouteFamily: Sendable, Equatable {
    case classes(changing: Bool)
    case objects(changing: Bool)
    /// `POST /v1/query` (a read).
    case query
    case notifications
    /// `POST /v1/transactions`: each operation is decided as its single request (section 15).
    case transactions
    /// `GET` and `POST /v1/observers`: a token's own list, and making one.
    case observers
    /// `/v1/observers/{id}` and everything under it.
    case observer(id: String, maker: String?, exists: Bool)
    /// Tokens, the admin stream, stats, metrics and anything else.
    case admin
    /// What needs no credential: health, the OpenAPI document, the dashboard's files.
    case open
}

/// What the decision says.
public enum Verdict: Sendable, Equatable {
    case allowed
    case forbidden
    /// Not there, and the caller may know it (404).
    case notFound
}

/// The one place where who may do what is decided. Every path asks it: `StoreState.authorize`
/// for every command as it is applied (onRemove's patches as their PATCH), the store's reads
/// for their filter (`ReadFilter`), the middleware for a request's route and a write for the
/// client it carries. A pure function of the question, the principal and what the
/// principal's token may do (`access`: nil for the admin, the server and observers the admin
/// made); a token that ended is refused before (401, `StoreState.access(of:at:)`).
public enum Authorization {
    public static func decide(_ question: AccessQuestion, by principal: Principal, access: Access?) -> Verdict {
        if case .route(.open) = question { return .allowed }
        switch principal {
        case .nobody:
            return .forbidden
        case .server:
            if case .command(background: true) = question { return .allowed }
            return .forbidden
        case .admin:
            if case .command(background: true) = question { return .forbidden }
            return .allowed
        case .observer, .token, .jwt:
            switch question {
            case .command(let background): return background ? .forbidden : .allowed
            case .read: return .allowed  // through the filter its scopes make
            default: break
            }
            if case .observer(let own) = principal { return decideForObserverToken(question, own: own, access: access) }
            guard let access else { return .forbidden }
            return decideForToken(question, access: access)
        }
    }

    /// Decides, and throws the refusal: 403, or 404 for what the caller may know is missing.
    public static func check(_ question: AccessQuestion, by principal: Principal, access: Access?) throws(CoreError) {
        switch decide(question, by: principal, access: access) {
        case .allowed: return
        case .notFound:
            if case .observer(let id, _, _) = question { throw CoreError.notFound("observer", id) }
            throw CoreError(.notFound, "not found")
        case .forbidden: throw refusal(question, by: principal, access: access)
        }
    }

    /// An observer's own token (section 9): its observer, and reading and observing through it
    /// what the token that made the observer may (everything, when the admin made it).
    private static func decideForObserverToken(_ question: AccessQuestion, own: String, access: Access?) -> Verdict {
        switch question {
        case .command, .read: return .allowed  // decided above
        case .observer(let id, _, _): return id == own ? .allowed : .forbidden
        case .object(let action, _), .missingObject(let action, _):
            guard action == .read || action == .observe else { return .forbidden }
        case .name(let action, _): guard action == .subscribe else { return .forbidden }
        case .query, .client: break
        case .makeObserver, .adminOnly: return .forbidden
        case .route(let family):
            switch family {
            case .observer(let id, _, _): return id == own ? .allowed : .forbidden
            case .objects(changing: false), .classes(changing: false), .query: return .allowed
            default: return .forbidden
            }
        }
        guard let access else { return .allowed }
        return scopes(question, access)
    }

    /// A stored scoped token or a JWT (section 13): its scopes, and the observers it made.
    private static func decideForToken(_ question: AccessQuestion, access: Access) -> Verdict {
        switch question {
        case .command, .read: return .allowed  // decided above
        case .observer(_, let maker, let exists):
            return maker == access.tokenID ? .allowed : exists ? .forbidden : .notFound
        case .makeObserver:
            let actions = access.grant.actions
            return actions.contains(.observe) || actions.contains(.subscribe) ? .allowed : .forbidden
        case .adminOnly: return .forbidden
        case .route(let family):
            switch family {
            case .objects, .query, .notifications, .observers, .transactions: return .allowed
            case .classes(let changing):
                return !changing && access.grant.actions.contains(.read) ? .allowed : .forbidden
            case .observer(_, let maker, let exists):
                return maker == access.tokenID ? .allowed : exists ? .forbidden : .notFound
            case .admin, .open: return .forbidden
            }
        case .object, .missingObject, .name, .query, .client: return scopes(question, access)
        }
    }

    /// What the scopes say of an object, a name, a query or a client name.
    private static func scopes(_ question: AccessQuestion, _ access: Access) -> Verdict {
        let allowed: Bool
        switch question {
        case .object(let action, let object): allowed = access.allows(action, object)
        case .missingObject(let action, let id): allowed = access.mightAllow(action, id: id)
        case .name(let action, let name): allowed = access.allows(action, name: name)
        case .query(let className):
            allowed = access.grant.scopes.contains { scope in
                scope.allow.contains(.observe) && (scope.className == nil || scope.className == className)
            }
        case .client(let name): allowed = name == nil || access.client == nil || name == access.client
        default: allowed = true
        }
        return allowed ? .allowed : .forbidden
    }

    /// The 403 for a refused question, worded for its caller.
    private static func refusal(_ question: AccessQuestion, by principal: Principal, access: Access?) -> CoreError {
        let message: String
        var details: JSONObject = [:]
        switch (question, principal) {
        case (.command(background: true), _): message = "background changes are the server's own"
        case (.command, .nobody), (.read, _): message = "a valid token is required"
        case (.command, _): message = "the server's own changes are background changes only"
        case (_, .observer) where !isScopes(question):
            message = "an observer's token manages its own observer only"
        case (.object(.create, let object), _):
            message = "this token may not create object '\(object.id)' of class \(object.className ?? "none")"
        case (.object(let action, let object), _):
            message = "this token may not \(action.rawValue) object '\(object.id)'"
        case (.missingObject(let action, let id), _): message = "this token may not \(action.rawValue) object '\(id)'"
        case (.name(.post, let name), _): message = "this token may not post '\(name ?? "")'"
        case (.name(_, let name), _):
            message = "this token may not subscribe to \(name.map { "'\($0)'" } ?? "every name")"
        case (.observer(let id, _, _), _), (.route(.observer(let id, _, _)), _):
            message = "this token may not use observer '\(id)'"
        case (.makeObserver, _): message = "a token makes observers only when it may observe or subscribe"
        case (.query(let className), _):
            message = "this token may not observe \(className.map { "class \($0)" } ?? "objects")"
        case (.adminOnly(let what), _): message = "only the admin token may \(what)"
        case (.route(.classes(changing: true)), _): message = "only the admin token may change classes"
        case (.route(.classes), _): message = "this token may not read"
        case (.route, _): message = "this route is the admin token's"
        case (.client, _):
            message = "this token writes as client '\(access?.client ?? "")': Obs-Client must be that or absent"
            details = ["header": "Obs-Client"]
        }
        return CoreError(.forbidden, message, details: details)
    }

    /// Whether the question is one the maker's scopes answer for an observer's token.
    private static func isScopes(_ question: AccessQuestion) -> Bool {
        switch question {
        case .object(let action, _), .missingObject(let action, _): action == .read || action == .observe
        case .name(let action, _): action == .subscribe
        case .query, .client: true
        default: false
        }
    }
}
