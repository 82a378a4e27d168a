import ObservationCore

/// Which routes a caller may use at all (sections 9 and 13): the request's route family, with
/// the facts its decision needs, asked of `Authorization` (the one decision). What a route then
/// does with an object, a name or an observer is decided again by the core, with the caller's
/// principal, when its command is applied or its read made.
enum RouteAccess {
    /// Why `caller` may not use `request`'s route (403), or nil. `unknownObserver`: a scoped
    /// caller names an observer this replica does not know (yet: on a cluster, decide again
    /// once it has caught up; else the route answers 404).
    static func refusal(_ request: HTTPRequest, _ caller: Caller, store: Store) -> APIError? {
        // `Authorization` lets the admin use every route: its route's family is not worked out.
        if case .admin = caller { return nil }
        let question = AccessQuestion.route(
            family(of: request) { id in
                // Only a token's decision reads who made the observer.
                guard case .scoped = caller else { return (true, nil) }
                return store.maker(ofObserver: id)
            })
        do {
            try Authorization.check(question, by: caller.principal, access: caller.access)
            return nil
        } catch  where error.code == .notFound {
            return unknownObserver
        } catch {
            return APIError(error)
        }
    }

    /// What `request`'s route touches; `maker` tells whether an observer exists and which token made it.
    static func family(of request: HTTPRequest, maker: (String) -> (exists: Bool, tokenID: String?)) -> RouteFamily {
        let segments = request.segments
        guard segments.inAPI else { return isOpen(request) ? .open : .admin }
        let reading = request.method == .get || request.method == .head
        guard segments.count >= 2 else { return .admin }
        // Compared in place: no segment is made a string for this.
        if segments.segment(1, is: "objects") { return .objects(changing: !reading) }
        if segments.segment(1, is: "classes") { return .classes(changing: !reading) }
        if segments.segment(1, is: "query") { return .query }
        if segments.segment(1, is: "notifications") { return .notifications }
        if segments.segment(1, is: "transactions") { return .transactions }
        guard segments.segment(1, is: "observers") else { return .admin }
        guard segments.count >= 3 else { return .observers }
        let id = segments[2]
        let (exists, tokenID) = maker(id)
        return .observer(id: id, maker: tokenID, exists: exists)
    }

    /// Whether `request` needs no credential at all (its family is `.open`): health, the OpenAPI
    /// document and the dashboard's files, read outside `/v1`; metrics are not.
    static func isOpen(_ request: HTTPRequest) -> Bool {
        let segments = request.segments
        return (request.method == .get || request.method == .head) && !segments.inAPI && !segments.are("metrics")
    }

    /// Not an answer: the observer is unknown here (see `refusal`).
    static let unknownObserver = APIError(status: 404, code: "notFound", message: "unknown observer")
}
