/// A read (an API `GET` or `HEAD`, an event stream, `POST /v1/query`) is answered once the replica has applied
/// everything committed when it arrived: read-your-writes across cluster nodes (at once on
/// a single server).
struct ReadBarrierMiddleware: Middleware {
    let replica: any Replica

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        guard request.method == .get || request.method == .head || request.isQueryRead, request.path.hasPrefix("/v1/")
        else {
            return next(request, context)
        }
        return replica.barrier { next(request, context) }
    }
}

extension HTTPRequest {
    /// `POST /v1/query`: a POST that reads (section 12), as a GET would.
    var isQueryRead: Bool { method == .post && segments.are("v1", "query") }
}
