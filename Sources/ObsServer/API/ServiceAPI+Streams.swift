import Foundation
import ObservationCore

extension ServiceAPI {
    func registerStreams(in router: inout RouterBuilder) {
        router.on(.get, "/v1/observers/{id}/events") { request, parameters in
            try openStream(request, observerID: parameters["id"])
        }
        router.on(.get, "/v1/events") { request, _ in
            try openStream(request, observerID: nil)
        }
    }

    /// Opens an SSE stream on an observer's log (nil: the admin log), resuming after
    /// `Last-Event-ID` / `?lastEventId=` when given (section 7).
    private func openStream(_ request: HTTPRequest, observerID: String?) throws -> HTTPResponse {
        let resumeText = request.headers.lastEventID ?? request.stringQuery("lastEventId")
        var resumeAfter: Int?
        if let resumeText {
            guard let value = Int(resumeText.trimmingCharacters(in: .whitespaces)), value >= 0 else {
                throw CoreError(.invalidRequest, "Last-Event-ID must be a non-negative integer, not '\(resumeText)'")
            }
            resumeAfter = value
        }
        let log = try store.openStream(of: observerID)
        var cursor: Int
        var prelude: [Event] = []
        var rebuild: RebuildSource?
        switch log.resumePoint(after: resumeAfter) {
        case .after(let id):
            cursor = id
        case .reset(let oldestAvailable, let last):
            // The resume point is gone: reset, then (for an observer) the state to rebuild from.
            cursor = last
            prelude.append(
                Event(
                    id: 0, name: "reset",
                    data: JSON.object(["reason": "gap", "oldestAvailable": .int(oldestAvailable)]).encoded()))
            if let observerID {
                rebuild = RebuildSource { [store] after, maxBytes in
                    store.rebuildRecords(of: observerID, after: after, maxBytes: maxBytes)
                }
            }
        }
        let stream = EventStream(
            log: log, cursor: cursor, prelude: prelude, rebuild: rebuild, counters: hub.counters
        ) {
            [store, hub] stream in
            hub.remove(stream)
            store.closeStream(of: observerID)
        }
        hub.add(stream)
        return .eventStream(stream)
    }
}
