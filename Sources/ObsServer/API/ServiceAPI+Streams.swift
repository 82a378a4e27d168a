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
        let (log, close) = try cluster.map { try clusterStream(of: observerID, $0) } ?? localStream(of: observerID)
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
            [hub] stream in
            hub.remove(stream)
            close()
        }
        hub.add(stream)
        return .eventStream(stream)
    }

    /// A single server's stream: opening and closing are commands applied here.
    private func localStream(of observerID: String?) throws(CoreError) -> (EventLog, @Sendable () -> Void) {
        let log = try store.openStream(of: observerID)
        return (log, { [store] in store.closeStream(of: observerID) })
    }

    /// A cluster node's stream: the node checks its own stream limit, and an observer's stream
    /// opening and closing go through the log (they hold the lease cluster-wide), named by
    /// this node's incarnation. The stream starts at once (the read barrier has run).
    private func clusterStream(of observerID: String?, _ cluster: ClusterNode) throws(CoreError) -> (
        EventLog, @Sendable () -> Void
    ) {
        guard cluster.isHealthy, let holder = cluster.tag else {
            throw ClusterNode.unavailable("the node is not connected to the cluster's database now")
        }
        guard hub.count < maxStreams else {
            throw CoreError(
                .limitExceeded, "this node holds its limit of \(maxStreams) event streams",
                details: ["limit": .int(maxStreams)])
        }
        let log = try store.eventLog(of: observerID)
        guard let observerID else { return (log, {}) }
        cluster.submit(Command(time: .now(), .openStream(observer: observerID, holder: holder))) { _ in }
        return (
            log,
            {
                cluster.submit(Command(time: .now(), .closeStream(observer: observerID, holder: holder))) { _ in }
            }
        )
    }
}
