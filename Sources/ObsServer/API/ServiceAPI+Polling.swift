import ObservationCore

extension ServiceAPI {
    /// Whether the client asked for a poll (section 7.2): `Accept` names `application/json`
    /// and neither event-stream type.
    static func wantsPoll(_ request: HTTPRequest) -> Bool {
        guard let accept = request.headers.accept else { return false }
        return ASCII.contains(accept, lowercased: "application/json")
            && !ASCII.contains(accept, lowercased: "text/event-stream")
            && !ASCII.contains(accept, lowercased: "application/x-ndjson")
    }

    /// Answers a poll of an observer's log (nil: the admin log): the events after `after`, or
    /// `reset` and the rebuild, as one JSON answer; with `wait`, once the first event is there
    /// or the wait runs out.
    ///
    /// A poll with `wait` > 0 is a stream from its arrival to its answer: it is counted in
    /// `streams`, under `--max-streams`, and holds the observer's lease (the lease counts again,
    /// in full, from its answer). One with `wait=0` is a plain read.
    func poll(_ request: HTTPRequest, observerID: String?, caller: Caller) throws -> Reply {
        let query = try Self.pollQuery(request)
        let log: EventLog
        var close: @Sendable () -> Void = {}
        if query.wait > 0 {
            (log, close) = try replica.openStream(of: observerID)
        } else {
            log = try store.eventLog(of: observerID)
        }
        var rebuild: EventPoll.Rebuild?
        if let observerID {
            rebuild = { [store] after, maxBytes, limit in
                store.rebuildRecords(of: observerID, after: after, maxBytes: maxBytes, limit: limit)
            }
        }
        let poll = EventPoll(log: log, query: query, rebuild: rebuild)
        let cursor: Int
        switch poll.look() {
        case .answer(let answer):
            close()
            return .now(sent(answer))
        case .upToDate(let after) where query.wait > 0:
            cursor = after
        case .upToDate(let after):
            return .now(sent(PollAnswer(events: [], lastEventID: after)))
        }
        let resumed = poll.resuming(after: cursor)
        let waiting = WaitingPoll(
            log: log, cursor: cursor, deadline: .now + .seconds(query.wait), polls: hub.polls,
            credential: StreamCredential(caller),
            produce: { [self] in
                switch resumed.look() {
                case .answer(let answer): .now(sent(answer))
                case .upToDate(let cursor): .now(sent(PollAnswer(events: [], lastEventID: cursor)))
                }
            },
            produceRevoked: { [self] event in .now(sent(PollAnswer(events: [event], lastEventID: cursor))) },
            close: close)
        if hub.polls.add(waiting) {
            waiting.watch()
        } else {
            waiting.end(.answer)  // the server is stopping: nothing waits
        }
        return .later(waiting.answer)
    }

    /// A poll's answer, its events counted as sent.
    private func sent(_ answer: PollAnswer) -> HTTPResponse {
        hub.counters.events.add(answer.logEvents, ordering: .relaxed)
        return answer.response
    }

    /// `after` (an event id, 0 or more), `wait` (0–60 s), `limit` (1–1000) and `rebuildAfter` (a
    /// rebuild's continuation, with `after`): anything else is 400 `invalidRequest`.
    static func pollQuery(_ request: HTTPRequest) throws -> PollQuery {
        var query = PollQuery()
        query.after = try optionalCount(request, "after", "the id of the last event the client has")
        query.wait = try request.intQuery("wait", default: 0, in: 0...60)
        query.limit = try request.intQuery("limit", default: 100, in: 1...1000)
        query.rebuildAfter = try optionalCount(request, "rebuildAfter", "the rebuildAfter of the last answer")
        if query.rebuildAfter != nil, query.after == nil {
            throw CoreError(
                .invalidRequest, "query 'rebuildAfter' goes on with a rebuild: pass it with 'after'",
                details: ["field": .string("rebuildAfter")])
        }
        return query
    }

    /// The non-negative integer query argument `name`; nil when absent or empty.
    private static func optionalCount(_ request: HTTPRequest, _ name: String, _ what: String) throws -> Int? {
        guard let text = request.stringQuery(name) else { return nil }
        guard let value = Int(text), value >= 0 else {
            throw CoreError(
                .invalidRequest, "query '\(name)' must be an integer, 0 or more (\(what))",
                details: ["field": .string(name)])
        }
        return value
    }
}
