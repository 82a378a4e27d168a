import ObservationCore

/// What a request is answered with: the one kind of reply every handler, middleware and
/// replica returns, and the daemon sends.
///
/// - `now`: a complete answer, sent at once.
/// - `stream`: the answer's head, then its body as an event stream (the connection parks
///   whenever the stream has nothing to send).
/// - `later`: the answer is not known yet (a write waiting to be durable or to come back from
///   the cluster's log, a read waiting for the node to catch up, a poll waiting for an event).
///   The daemon parks the connection until the `DeferredAnswer` is resolved, with a reply of
///   its own (which may be `later` again). Whoever makes one resolves it in bounded time: a
///   durable write within `--commit-timeout` (the committer), a cluster write and a cluster
///   read too (`ClusterShared.expire`, `ClusterReplica.barrier`), a poll at the end of its
///   `wait` (the timer thread), and every one at shutdown.
/// - `close`: no answer: the connection closes unanswered (a deferred answer given up at
///   shutdown, whose change may or may not have taken effect; a waiting poll whose client hung up).
enum Reply: Sendable {
    case now(HTTPResponse)
    case stream(HTTPResponse, any StreamBody)
    case later(DeferredAnswer)
    case close

    /// A JSON answer whose body `write` produces.
    static func json(status: Int = 200, _ write: (inout JSONWriter) -> Void) -> Reply {
        .now(HTTPResponse.json(status: status, write))
    }

    /// A JSON answer with `value` as its body.
    static func json(_ value: JSON, status: Int = 200) -> Reply {
        .now(HTTPResponse.json(value, status: status))
    }

    /// 204 No Content.
    static let noContent = Reply.now(.noContent)
}

extension HTTPResponse {
    /// An event stream fed by `stream`: `text/event-stream`, or `application/x-ndjson`. Never
    /// stored or buffered by caches and proxies (section 7.2).
    static func eventStream(_ stream: any StreamBody, ndjson: Bool = false) -> Reply {
        var head = HTTPResponse(
            status: 200, contentType: ndjson ? "application/x-ndjson" : "text/event-stream", body: [])
        head.headers = [("Cache-Control", "no-store"), ("X-Accel-Buffering", "no")]
        return .stream(head, stream)
    }
}
