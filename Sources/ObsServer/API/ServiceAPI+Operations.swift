import ObservationCore

extension ServiceAPI {
    func registerOperations(in router: inout RouterBuilder) {
        router.on(.get, "/healthz") { _, _ in
            // Not caught up with the cluster, or cut off from its database: send clients elsewhere.
            guard let unavailability = replica.unavailability else { return .json(["status": "ok"]) }
            return .now(APIError(unavailability).response)
        }
        router.on(.get, "/v1/stats") { _, _ in .json(.object(figures())) }
        router.on(.get, "/metrics") { _, _ in .now(prometheus()) }
    }

    /// The counts of `/v1/stats`.
    private func figures() -> JSONObject {
        let stats = store.stats()
        var figures: JSONObject = [
            "objects": .int(stats.objects),
            "classes": .int(stats.classes),
            "observers": .int(stats.observers),
            "observations": .int(stats.observations),
            "subscriptions": .int(store.subscriptionCount),
            "queries": .int(store.queryCount),
            "streams": .int(replica.streamCount),
            "eventsSent": .int(hub.counters.events.load(ordering: .relaxed)),
            "droppedStreams": .int(hub.counters.dropped.load(ordering: .relaxed)),
            "requests": .int(counters.requests.load(ordering: .relaxed)),
            "revision": .int(stats.revision),
            "writable": .bool(replica.isWritable),
            "uptime": .double((counters.uptimeSeconds * 1000).rounded() / 1000),
        ]
        replica.addFigures(to: &figures)
        return figures
    }

    /// `/metrics`: the same figures, the committer's, and latency histograms, in Prometheus text format.
    private func prometheus() -> HTTPResponse {
        var text = ""
        func metric(_ name: String, _ type: String, _ help: String, _ value: String) {
            text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        let stats = figures()
        for (key, name, help) in [
            ("objects", "obs_objects", "Objects held."), ("classes", "obs_classes", "Classes defined."),
            ("observers", "obs_observers", "Observers held."),
            ("observations", "obs_observations", "KVO registrations held."),
            ("subscriptions", "obs_subscriptions", "Notification subscriptions held."),
            ("queries", "obs_queries", "Queries held (section 12), under --max-queries."),
            ("streams", "obs_streams", "Open event streams, the admin stream included."),
            ("revision", "obs_revision", "The global revision."),
        ] {
            metric(name, "gauge", help, stats[key].map { String(decoding: $0.encoded(), as: UTF8.self) } ?? "0")
        }
        metric(
            "obs_events_sent_total", "counter", "Events written to event streams.",
            "\(hub.counters.events.load(ordering: .relaxed))")
        metric(
            "obs_dropped_streams_total", "counter", "Streams cut off for reading too slowly.",
            "\(hub.counters.dropped.load(ordering: .relaxed))")
        metric("obs_requests_total", "counter", "HTTP requests.", "\(counters.requests.load(ordering: .relaxed))")
        let buffers = store.bufferFigures()
        for (name, help, value) in [
            ("obs_replay_events", "Events held in observers' replay buffers.", buffers.replayEvents),
            ("obs_replay_bytes", "Bytes held in observers' replay buffers.", buffers.replayBytes),
            ("obs_admin_replay_events", "Events held in the admin stream's buffer.", buffers.adminReplayEvents),
            ("obs_admin_replay_bytes", "Bytes held in the admin stream's buffer.", buffers.adminReplayBytes),
            ("obs_lease_deadlines", "Lease deadlines waiting (observers without a stream).", buffers.leaseDeadlines),
            ("obs_queued_notifications", "Postings waiting in the asap and idle queues.", buffers.queuedNotifications),
            ("obs_queued_notification_bytes", "Bytes of postings waiting.", buffers.queuedNotificationBytes),
        ] {
            metric(name, "gauge", help, "\(value)")
        }
        metric("obs_uptime_seconds", "gauge", "Seconds since start.", "\(counters.uptimeSeconds)")
        metric(
            "obs_writable", "gauge",
            "1 while writes are accepted; 0 while the data directory or the cluster's database refuses them (503).",
            replica.isWritable ? "1" : "0")
        for (name, type, help, value) in replica.metrics { metric(name, type, help, value) }
        webhookMetrics(into: &text)
        metrics.render(into: &text)
        return HTTPResponse(
            status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Array(text.utf8))
    }
}
