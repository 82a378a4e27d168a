import ObservationCore

/// What a poll asked (section 7.2): `?after=n&wait=s&limit=k`, and `rebuildAfter` (an addition)
/// to go on with a rebuild that did not fit in one answer.
struct PollQuery: Sendable {
    /// The last event the client has; nil: none yet (from the oldest event held, as a stream).
    var after: Int?
    /// How long to wait for the first event, in seconds (0: answer at once).
    var wait = 0
    /// The most events in one answer.
    var limit = 100
    /// A rebuild going on: the registration sequence the last answer's rebuild ended at.
    var rebuildAfter: Int?
}

/// A poll's answer: `{"events": [{"id", "event", "data"}], "lastEventId": m}`, plus
/// `"rebuildAfter": s` while a rebuild goes on.
struct PollAnswer: Sendable {
    var events: [Event]
    /// What to pass as `after` next time.
    var lastEventID: Int
    /// Where the rebuild goes on (nil: it is complete, or there was none).
    var rebuildAfter: Int?

    /// The events that came from the log (those with an id): the events a stream counts as sent.
    var logEvents: Int { events.reduce(0) { $0 + ($1.id > 0 ? 1 : 0) } }

    /// 200 with the JSON body, elements framed as NDJSON lines are (`Event.appendJSONHead`);
    /// never stored by caches.
    var response: HTTPResponse {
        let events = events.map(\.materialized)  // a deferred event's data is encoded once
        var bytes: [UInt8] = []
        bytes.reserveCapacity(events.reduce(64) { $0 + $1.data.count + 48 })
        bytes.append(contentsOf: "{\"events\":[".utf8)
        for (index, event) in events.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            event.appendJSONHead(to: &bytes)
            bytes.append(contentsOf: event.data)
            bytes.append(UInt8(ascii: "}"))
        }
        bytes.append(contentsOf: "],\"lastEventId\":".utf8)
        JSONWriter.appendDecimal(lastEventID, to: &bytes)
        if let rebuildAfter {
            bytes.append(contentsOf: ",\"rebuildAfter\":".utf8)
            JSONWriter.appendDecimal(rebuildAfter, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
        var response = HTTPResponse(status: 200, contentType: HTTPResponse.jsonContentType, body: bytes)
        response.headers = [("Cache-Control", "no-store")]
        return response
    }
}

/// One look at an event log for a poll (section 7.2): the events after its cursor, or, when
/// the resume point is gone or was never made, `reset` and the rebuild, as a stream would send
/// them, within the poll's limits.
///
/// It reads the log the observer's streams read (the same buffer, the same ids) and keeps
/// nothing: a poll costs the log no cursor and no copy. Its answer is at most `limit` events
/// and about `maxBytes` of them (at least one), so whatever the log or the rebuild holds, one
/// answer's memory is bounded.
struct EventPoll: Sendable {
    /// An observer's rebuild records: after registration sequence `after`, at most `limit` and
    /// about `maxBytes` of them; with the sequence of the last and whether more follow.
    typealias Rebuild =
        @Sendable (_ after: Int, _ maxBytes: Int, _ limit: Int) -> (
            records: [Event], last: Int, more: Bool
        )?

    /// What a poll finds.
    enum Look: Sendable {
        /// Something to answer.
        case answer(PollAnswer)
        /// Nothing after `cursor` yet: a poll that may wait waits for events after it.
        case upToDate(cursor: Int)
    }

    /// The most bytes of events (`Event.footprint`) one answer holds, once it holds one.
    static let maxBytes = 1 << 20

    let log: EventLog
    let query: PollQuery
    /// The observer's rebuild (nil for the admin log, which has none).
    let rebuild: Rebuild?

    func look() -> Look {
        let point = log.resumePoint(after: query.after)
        if case .after(let cursor) = point, let rebuildAfter = query.rebuildAfter, let rebuild,
            let part = rebuild(rebuildAfter, Self.maxBytes, query.limit)
        {
            // The rebuild goes on while the log still holds what follows the point it covers;
            // then its records have every change before that point, and the log the rest.
            return .answer(
                PollAnswer(events: part.records, lastEventID: cursor, rebuildAfter: part.more ? part.last : nil))
        }
        switch point {
        case .after(let cursor):
            switch log.read(after: cursor, limit: query.limit, maxBytes: Self.maxBytes) {
            case .events(let events):
                return .answer(PollAnswer(events: events, lastEventID: events.last?.id ?? cursor))
            case .upToDate:
                return .upToDate(cursor: cursor)
            case .gap(let oldest):
                return .answer(reset("gap", oldestAvailable: oldest, covered: log.lastID))
            }
        case .reset(let oldest, let cursor):
            return .answer(reset("gap", oldestAvailable: oldest, covered: cursor))
        case .unknown(let oldest, let cursor):
            return .answer(reset("unknown", oldestAvailable: oldest, covered: cursor))
        }
    }

    /// The same poll going on after `cursor`: a waiting poll's next look.
    func resuming(after cursor: Int) -> EventPoll {
        var query = query
        query.after = cursor
        query.rebuildAfter = nil
        return EventPoll(log: log, query: query, rebuild: rebuild)
    }

    /// `reset`, then the first of the rebuild records; `lastEventId` is the last id the rebuild
    /// covers (the log's last id when the resume point was found gone), so the next poll goes
    /// on from there without another reset.
    private func reset(_ reason: String, oldestAvailable: Int, covered: Int) -> PollAnswer {
        var answer = PollAnswer(
            events: [.reset(reason: reason, oldestAvailable: oldestAvailable)], lastEventID: covered)
        guard let rebuild else { return answer }
        guard query.limit > 1 else {
            answer.rebuildAfter = 0  // no room for a record: the rebuild starts with the next poll
            return answer
        }
        if let part = rebuild(0, Self.maxBytes, query.limit - 1) {
            answer.events += part.records
            answer.rebuildAfter = part.more ? part.last : nil
        }
        return answer
    }
}
