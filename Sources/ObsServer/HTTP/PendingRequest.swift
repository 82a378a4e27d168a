import Logging
import ObservationCore

/// One request's state between libmicrohttpd's calls: its headers, query and body as they
/// arrive, then where its answer stands; and its `RequestContext` for the layers that answer it.
///
/// Unchecked Sendable: libmicrohttpd calls back for one connection on one thread at a time,
/// and a parked connection's request is touched again only once it is resumed, so the fields
/// are never touched concurrently.
final class PendingRequest: RequestContext, @unchecked Sendable {
    /// Where the request's answer stands.
    enum Phase {
        /// Headers and body arriving; then handled (the answer sent, or a stream).
        case reading
        /// The connection is parked until this answer is known.
        case parked(DeferredAnswer)
    }

    let method: HTTPMethod
    let path: String
    /// How a stream answer would be framed (from the request's HTTP version).
    let framing: StreamConnection.Framing
    // Unchecked exclusivity (here and below): libmicrohttpd hands a request to one callback at
    // a time, and these are changed in place on every request (the body appended, all three
    // moved out; the route and headers set through `RequestContext`): the run-time checks were
    // a measurable share of a request (BENCHMARKS.md, "Figures behind the code").
    /// Headers and query arguments (still percent-encoded), collected in place as they are read.
    @exclusivity(unchecked) var fields = RequestFields()
    @exclusivity(unchecked) var body: [UInt8] = []
    @exclusivity(unchecked) var phase = Phase.reading
    @exclusivity(unchecked) var rejection: APIError?
    /// Counted in the daemon's `answersInFlight` (its answer was deferred), until it completes.
    var countedInFlight = false
    @exclusivity(unchecked) var route = RouteLabel.unrouted
    @exclusivity(unchecked) var answerHeaders: [(name: String, value: String)] = []
    @exclusivity(unchecked) var caller = Caller.nobody
    /// `X-Request-Id`: the client's, or one made when the headers arrived.
    var requestID = ""
    /// What the request's command left to do once its answer is sent (`AnswerFirst`); a request
    /// that issues more than one command (a poll that opens and closes its stream) keeps the
    /// rest in `moreDeferredDeliveries`.
    @exclusivity(unchecked) var deferredDeliveries: OutboxDeliveries?
    @exclusivity(unchecked) var moreDeferredDeliveries: [OutboxDeliveries] = []
    /// The connection, while it is parked for a deferred answer (which resumes it).
    var connection: ConnectionHandle?
    /// The hang-up watcher's token for the socket, while a parked answer asks for it.
    var watch: (socket: Int32, token: UInt64)?
    let started = BootClock.nanoseconds

    init(method: HTTPMethod, path: String, framing: StreamConnection.Framing) {
        self.method = method
        self.path = path
        self.framing = framing
    }

    /// Makes the deliveries deferred until the answer (once: the list is emptied).
    func makeDeferredDeliveries() {
        guard let first = deferredDeliveries else { return }
        deferredDeliveries = nil
        first.make()
        guard !moreDeferredDeliveries.isEmpty else { return }
        for deliveries in moreDeferredDeliveries { deliveries.make() }
        moreDeferredDeliveries.removeAll()
    }

    /// Defers a command's deliveries until the answer is sent.
    func deferDeliveries(_ deliveries: OutboxDeliveries) {
        if deferredDeliveries == nil {
            deferredDeliveries = deliveries
        } else {
            moreDeferredDeliveries.append(deliveries)
        }
    }

    /// The request as the handlers see it, its headers, query and body moved into it (not
    /// copied: nothing reads them here again, and a stream's pending request, which lives as
    /// long as the stream, keeps none of it: idle streams stay small).
    func takeRequest() -> HTTPRequest {
        var (query, headers, body) = ([String: String](), HTTPHeaders(), [UInt8]())
        swap(&query, &fields.query)
        swap(&headers, &fields.headers)
        swap(&body, &self.body)
        return HTTPRequest(
            method: method, path: path, rawQuery: consume query, headers: consume headers,
            body: consume body)
    }

    /// What the log line of an answered request says besides its message: the request's id,
    /// the answer's route and status, the milliseconds it took, and the observer its path names.
    func logMetadata(status: Int) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "requestId": .string(requestID), "route": .string(route.name), "status": "\(status)",
            "ms": "\(Double(BootClock.nanoseconds - started) / 1e6)",
        ]
        let observers = "/v1/observers/"
        if path.hasPrefix(observers), let id = path.dropFirst(observers.count).split(separator: "/").first {
            metadata["observer"] = .string(PercentDecoding.decode(String(id)))
        }
        return metadata
    }
}
