/// Counts requests, and marks the server busy when each is answered: quiet for `idle`
/// postings counts from the moment an answer is ready, not from arrival.
struct ActivityMiddleware: Middleware {
    let counters: ServiceCounters

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        counters.recordRequest()
        defer { counters.recordActivity() }
        return next(request, context)
    }
}
