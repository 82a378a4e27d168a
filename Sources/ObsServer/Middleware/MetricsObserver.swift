/// Latency figures by route and status, taken when the answer is sent (however late). Not a
/// step of the chain: it only hears of answers (`MiddlewareChain.answered`).
struct MetricsObserver: AnswerObserver {
    let metrics: RequestMetrics

    func answered(_ status: Int, _ context: any RequestContext) {
        metrics.record(route: context.route, status: status, seconds: BootClock.seconds(since: context.started))
    }
}
