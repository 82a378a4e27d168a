import ObservationCore

extension ServiceAPI {
    func registerOperations(in router: inout RouterBuilder) {
        router.on(.get, "/healthz") { _, _ in .json(["status": "ok"]) }
        router.on(.get, "/v1/stats") { _, _ in
            let stats = store.stats()
            let members: JSONObject = [
                "objects": .int(stats.objects),
                "classes": .int(stats.classes),
                "observers": .int(stats.observers),
                "observations": .int(stats.observations),
                "subscriptions": .int(store.subscriptionCount),
                "streams": .int(stats.streams),
                "eventsSent": .int(hub.counters.events.load(ordering: .relaxed)),
                "droppedStreams": .int(hub.counters.dropped.load(ordering: .relaxed)),
                "requests": .int(counters.requests.load(ordering: .relaxed)),
                "revision": .int(stats.revision),
                "uptime": .double((counters.uptimeSeconds * 1000).rounded() / 1000),
            ]
            return .json(.object(members))
        }
    }
}
