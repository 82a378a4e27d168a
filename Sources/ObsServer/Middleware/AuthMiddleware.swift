/// Section 9's tokens: a request its credential does not allow is refused here (401, 403).
/// A token the replica does not know yet may belong to an observer made on another cluster
/// node: a 401 is decided again once the replica has caught up.
struct AuthMiddleware: Middleware {
    let authenticator: Authenticator
    let replica: any Replica

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        guard let refusal = authenticator.refusal(for: request) else { return next(request, context) }
        guard refusal.status == 401 else { return .now(refusal.response) }
        return replica.barrier { [authenticator] in
            authenticator.refusal(for: request).map { .now($0.response) } ?? next(request, context)
        }
    }
}

/// A read (an API `GET` or `HEAD`, an event stream) is answered once the replica has applied
/// everything committed when it arrived: read-your-writes across cluster nodes (at once on
/// a single server).
struct ReadBarrierMiddleware: Middleware {
    let replica: any Replica

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        guard request.method == .get || request.method == .head, request.path.hasPrefix("/v1/") else {
            return next(request, context)
        }
        return replica.barrier { next(request, context) }
    }
}
