/// Section 9's tokens: a request its credential does not allow is refused here (401, 403).
/// A token the replica does not know yet may belong to an observer made on another cluster
/// node: a 401 is decided again once the replica has caught up.
struct AuthMiddleware: Middleware {
    let authenticator: Authenticator
    let replica: any Replica

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        guard let refusal = authenticator.refusal(for: request) else { return next(request, context) }
        guard refusal.status == 401, replica.hasReadBarrier else { return .now(refusal.response) }
        return replica.barrier { [authenticator] in
            authenticator.refusal(for: request).map { .now($0.response) } ?? next(request, context)
        }
    }
}
