import Foundation
import ObservationCore
import Synchronization

extension ServiceAPI {
    func registerStreams(in router: inout RouterBuilder) {
        router.on(.get, "/v1/observers/{id}/events") { request, parameters in
            let (observerID, caller) = (parameters["id"], parameters.caller)
            return try Self.wantsPoll(request)
                ? poll(request, observerID: observerID, caller: caller)
                : openStream(request, observerID: observerID, caller: caller)
        }
        router.on(.get, "/v1/events") { request, parameters in
            try Self.wantsPoll(request)
                ? poll(request, observerID: nil, caller: parameters.caller)
                : openStream(request, observerID: nil, caller: parameters.caller)
        }
    }

    /// Opens an event stream on an observer's log (nil: the admin log), resuming after
    /// `Last-Event-ID` / `?lastEventId=` when given (section 7), with the options of 7.2.
    private func openStream(_ request: HTTPRequest, observerID: String?, caller: Caller) throws -> Reply {
        let options = StreamOptions(
            framing: Self.wantsNDJSON(request) ? .ndjson : .sse, commits: try request.flagQuery("commits"),
            progress: try request.flagQuery("progress"), retryMilliseconds: RetrySpread.next(in: 2_000...5_000))
        let resumeText = request.headers.lastEventID ?? request.stringQuery("lastEventId")
        let (log, close) = try replica.openStream(of: observerID)
        // The revision first, then the log: the replay up to its last visible event then holds
        // every event of that revision and before (`synced`).
        let settled = store.settledRevision
        let visible = log.visibleID
        var cursor = 0
        var prelude: [Event] = []
        var rebuild: RebuildSource?
        func reset(_ reason: String, oldestAvailable: Int, last: Int) {
            // The resume point is gone, or never was: reset, then (for an observer) the state to rebuild from.
            cursor = last
            prelude.append(.reset(reason: reason, oldestAvailable: oldestAvailable))
            if let observerID {
                rebuild = RebuildSource { [store] after, maxBytes in
                    store.rebuildRecords(of: observerID, after: after, maxBytes: maxBytes).map { ($0.records, $0.last) }
                }
            }
        }
        // Text that is not an integer names no event either: -1, which no log made.
        let resumeAfter = resumeText.map { Int($0.trimmingCharacters(in: .whitespaces)) ?? -1 }
        switch log.resumePoint(after: resumeAfter) {
        case .after(let id): cursor = id
        case .reset(let oldestAvailable, let last): reset("gap", oldestAvailable: oldestAvailable, last: last)
        case .unknown(let oldestAvailable, let last): reset("unknown", oldestAvailable: oldestAvailable, last: last)
        }
        let stream = EventStream(
            log: log, cursor: cursor, prelude: prelude, rebuild: rebuild,
            replayEnd: ReplayEnd(lastEventID: max(cursor, visible), revision: settled), options: options,
            hub: hub, revisions: store, credential: StreamCredential(caller), onClose: close)
        hub.add(stream)
        return HTTPResponse.eventStream(stream, ndjson: options.framing == .ndjson)
    }

    /// Whether the client asked for NDJSON (section 7.2) rather than Server-Sent Events.
    private static func wantsNDJSON(_ request: HTTPRequest) -> Bool {
        guard let accept = request.headers.accept else { return false }
        return ASCII.contains(accept, lowercased: "application/x-ndjson")
            && !ASCII.contains(accept, lowercased: "text/event-stream")
    }
}

/// Chooses each stream's `retry:` at random within a range without a system call per stream
/// (`Int.random` reads `getrandom` on every call): SplitMix64, seeded once from the system's
/// generator; one atomic step per stream, no lock.
enum RetrySpread {
    private static let state = Atomic<UInt64>(UInt64.random(in: .min ... .max))

    static func next(in range: ClosedRange<Int>) -> Int {
        precondition(range.count <= 1 << 32, "RetrySpread draws from at most 2^32 values")
        var mixed = state.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        mixed ^= mixed >> 31
        return range.lowerBound + Int(((mixed >> 32) &* UInt64(range.count)) >> 32)
    }
}
