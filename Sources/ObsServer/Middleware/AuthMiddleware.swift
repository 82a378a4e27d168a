import ObservationCore

/// Sections 9 and 13: resolves the request's credential to a `Caller` (401 when it has none
/// that works), refuses routes the caller may never use (403), and hands the caller on in the
/// context: its commands carry its principal, its reads its filter. A credential the replica
/// does not know yet may belong to something made on another cluster node: a 401 is decided
/// again once the replica has caught up.
struct AuthMiddleware: Middleware {
    let authenticator: Authenticator
    let replica: any Replica

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        let decided = decide(request)
        if case .failure(let refusal) = decided, refusal.status == 401 || refusal.status == 404,
            replica.hasReadBarrier
        {
            return replica.barrier { [self] in proceed(decide(request), request, context, next) }
        }
        return proceed(decided, request, context, next)
    }

    /// The caller, or its refusal; an observer still unknown here is the route's to answer (404).
    private func decide(_ request: HTTPRequest) -> Result<Caller, APIError> {
        authenticator.caller(of: request).flatMap { caller in
            RouteAccess.refusal(request, caller, store: replica.store).map { .failure($0) } ?? .success(caller)
        }
    }

    private func proceed(
        _ decided: Result<Caller, APIError>, _ request: HTTPRequest, _ context: any RequestContext,
        _ next: Responder
    ) -> Reply {
        switch decided {
        case .failure(let refusal) where refusal.status == 404:
            // Still unknown after the barrier: the route answers (404), with the caller's principal.
            guard case .success(let caller) = authenticator.caller(of: request) else { return .now(refusal.response) }
            context.caller = caller
            return next(request, context)
        case .failure(let refusal): return .now(refusal.response)
        case .success(let caller):
            context.caller = caller
            return next(request, context)
        }
    }
}
