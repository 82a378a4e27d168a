/// Answers a request: the router, or a middleware in front of the rest of the chain.
typealias Responder = @Sendable (HTTPRequest, any RequestContext) -> Reply

/// One step in front of the router, as in Hummingbird: it answers a request itself, or passes
/// it on to `next` (at once, or later from a `.later` reply: `next` may be kept).
///
/// Thread-safety: called on every worker thread at once.
protocol Middleware: Sendable {
    func handle(_ request: HTTPRequest, _ context: any RequestContext, next: @escaping Responder) -> Reply
}

/// Told of every answer as it is sent, however late: its status (not a step of the chain).
protocol AnswerObserver: Sendable {
    func answered(_ status: Int, _ context: any RequestContext)
}

/// The middleware in order, then the router, frozen into one responder when the server is
/// built (each step's `next` is made once here, not per request); and those told of answers.
struct MiddlewareChain: Sendable {
    let respond: Responder
    private let observers: [any AnswerObserver]

    init(_ middleware: [any Middleware], observers: [any AnswerObserver] = [], router: Router) {
        self.observers = observers
        var next: Responder = { request, context in
            // A request the daemon refused (its body is over the limit) is answered with that,
            // after the middleware in front (CORS headers, the request's figures).
            if let rejection = context.rejection { return .now(rejection.response) }
            return router.respond(to: request, context)
        }
        for step in middleware.reversed() {
            let rest = next
            next = { request, context in step.handle(request, context, next: rest) }
        }
        respond = next
    }

    /// Tells the answer observers of one as it is sent.
    func answered(_ status: Int, _ context: any RequestContext) {
        for observer in observers { observer.answered(status, context) }
    }
}
