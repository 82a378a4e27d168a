import ObservationCore

/// Which routes each kind of caller may use at all (sections 9 and 13). What a route does
/// with an object, a name or an observer is decided again by the core, with the caller's
/// principal, when its command is applied; reads go through the caller's `ReadFilter`.
enum RouteAccess {
    /// Why `caller` may not use `request`'s route (403), or nil. `unknownObserver`: a scoped
    /// caller names an observer this replica does not know (yet: on a cluster, decide again
    /// once it has caught up; else the route answers 404).
    static func refusal(_ request: HTTPRequest, _ caller: Caller, store: Store) -> APIError? {
        switch caller {
        case .admin: return nil
        case .observer(let id, _, _): return observerMay(request, id) ? nil : .forbidden
        case .scoped(let scoped): return scopedMay(request, scoped.access, store: store)
        }
    }

    /// An observer's token: its observer, and reading objects and classes (section 9).
    private static func observerMay(_ request: HTTPRequest, _ observerID: String) -> Bool {
        let segments = request.segments
        guard segments.count >= 2, segments[0] == "v1" else { return false }
        if segments.count >= 3, segments[1] == "observers", segments[2] == observerID { return true }
        if request.isQueryRead { return true }  // a read, like GET (section 12)
        guard request.method == .get || request.method == .head else { return false }
        return segments[1] == "objects" || segments[1] == "classes"
    }

    /// A scoped token: objects, queries, notifications and its own observers; classes to
    /// read when it may read anything. Tokens, the admin stream, stats and metrics are the admin's.
    private static func scopedMay(_ request: HTTPRequest, _ access: Access, store: Store) -> APIError? {
        let segments = request.segments
        guard segments.count >= 2, segments[0] == "v1" else { return forbidden("this route is the admin token's") }
        switch segments[1] {
        case "objects", "query", "notifications": return nil
        case "classes":
            guard request.method == .get || request.method == .head else {
                return forbidden("only the admin token may change classes")
            }
            return access.grant.actions.contains(.read) ? nil : forbidden("this token may not read")
        case "observers":
            guard segments.count >= 3 else { return nil }  // its own list; creating one is decided by the core
            let (exists, maker) = store.maker(ofObserver: segments[2])
            guard exists else { return unknownObserver }
            return maker == access.tokenID ? nil : forbidden("this token may not use observer '\(segments[2])'")
        default: return forbidden("this route is the admin token's")
        }
    }

    /// Not an answer: the observer is unknown here (see `refusal`).
    static let unknownObserver = APIError(status: 404, code: "notFound", message: "unknown observer")

    static func forbidden(_ message: String) -> APIError {
        APIError(status: 403, code: "forbidden", message: message)
    }
}
