import ObservationCore

extension ServiceAPI {
    func registerNotifications(in router: inout RouterBuilder) {
        router.on(.post, "/v1/observers/{id}/subscriptions") { request, parameters in
            let body = try jsonBody(request, allowed: ["name", "object"])
            return try execute(
                request, parameters.caller,
                .subscribe(
                    observer: parameters["id"], name: try body.string("name"), object: try body.string("object"),
                    subscriptionID: Command.newID("sub_")))
        }
        router.on(.get, "/v1/observers/{id}/subscriptions") { _, parameters in
            .json([
                "subscriptions": .array(
                    try store(parameters).observer(parameters["id"]).subscriptionList.map { .object($0.json) })
            ])
        }
        router.on(.delete, "/v1/observers/{id}/subscriptions/{subscription}") { request, parameters in
            try execute(
                request, parameters.caller,
                .unsubscribe(
                    observer: parameters["id"], subscription: parameters["subscription"], name: nil, object: nil))
        }
        router.on(.delete, "/v1/observers/{id}/subscriptions") { request, parameters in
            try execute(
                request, parameters.caller,
                .unsubscribe(
                    observer: parameters["id"], subscription: nil, name: request.stringQuery("name"),
                    object: try request.idQuery("object")))
        }
        router.on(.post, "/v1/notifications") { request, parameters in
            let body = try jsonBody(request, allowed: WriteBodies.postMembers)
            return try execute(request, parameters.caller, try WriteBodies.post(body))
        }
    }
}
