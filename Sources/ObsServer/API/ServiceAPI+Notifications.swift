import ObservationCore

extension ServiceAPI {
    func registerNotifications(in router: inout RouterBuilder) {
        router.on(.post, "/v1/observers/{id}/subscriptions") { request, parameters in
            let body = try jsonBody(request, allowed: ["name", "object"])
            let result = try store.subscribe(
                observerID: parameters["id"], name: try body.string("name"), object: try body.string("object"))
            var members = result.subscription.json
            if result.deduplicated { members["deduplicated"] = true }
            if let revision = result.revision { members["revision"] = .int(revision) }
            return .json(.object(members), status: result.deduplicated ? 200 : 201)
        }
        router.on(.get, "/v1/observers/{id}/subscriptions") { _, parameters in
            .json([
                "subscriptions": .array(try store.observer(parameters["id"]).subscriptionList.map { .object($0.json) })
            ])
        }
        router.on(.delete, "/v1/observers/{id}/subscriptions/{subscription}") { _, parameters in
            _ = try store.unsubscribe(observerID: parameters["id"], subscriptionID: parameters["subscription"])
            return .noContent
        }
        router.on(.delete, "/v1/observers/{id}/subscriptions") { request, parameters in
            _ = try store.unsubscribe(
                observerID: parameters["id"], name: request.stringQuery("name"), object: try request.idQuery("object"))
            return .noContent
        }
        router.on(.post, "/v1/notifications") { request, _ in
            let body = try jsonBody(request, allowed: ["name", "object", "userInfo", "posting", "coalesce"])
            let name = try body.required("name", body.string)
            let styleName = try body.string("posting") ?? "now"
            guard let style = PostingStyle(rawValue: styleName) else {
                throw CoreError(.invalidRequest, "posting must be now, asap or idle, not '\(styleName)'")
            }
            var coalesce: [String] = []
            for field in try body.array("coalesce") ?? [] {
                guard case .string(let text) = field else {
                    throw CoreError(.typeMismatch, "coalesce must list \"name\" and/or \"object\"")
                }
                coalesce.append(text)
            }
            switch try store.post(
                name: name, object: try body.string("object"), userInfo: try body.object("userInfo").map(JSON.object),
                style: style,
                coalesce: coalesce)
            {
            case .delivered(let revision, let count):
                return .json(["revision": .int(revision), "delivered": .int(count)])
            case .queued(let coalesced):
                timer.reschedule()
                return .json(["queued": true, "coalesced": .int(coalesced)])
            }
        }
    }
}
