/// What the layers that handle a request note for the daemon, which sends its answer: the
/// route that answered (figures), headers every answer to it carries (CORS), its id, and a
/// refusal the daemon made while reading it (a body over the limit).
///
/// One per request. Touched on the request's worker thread only: by the middleware and the
/// router as they handle it, and by a deferred answer's producer, which runs there too once
/// the parked connection is resumed.
protocol RequestContext: AnyObject, Sendable {
    /// `X-Request-Id`: the client's, or one the daemon made.
    var requestID: String { get }
    /// The route that answered (`RouteLabel.unrouted` until one does).
    var route: RouteLabel { get set }
    /// Headers added to whatever answer the request gets, when it is sent.
    var answerHeaders: [(name: String, value: String)] { get set }
    /// When the daemon began reading the request (`BootClock` nanoseconds).
    var started: Int64 { get }
    /// A refusal the daemon made before the request reached the handlers (nil: none).
    var rejection: APIError? { get }
    /// Who the request comes from (`AuthMiddleware`; the admin until it says otherwise).
    var caller: Caller { get set }
}
