/// Latency figures by route and status, taken when the answer is sent (however late).
struct MetricsMiddleware: Middleware, AnswerObserver {
    let metrics: RequestMetrics

    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply {
        next(request, context)
    }

    func answered(_ status: Int, _ context: any RequestContext) {
        metrics.record(route: context.route, status: status, seconds: BootClock.seconds(since: context.started))
    }
}
