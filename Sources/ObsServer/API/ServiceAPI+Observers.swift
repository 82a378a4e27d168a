import ObservationCore

extension ServiceAPI {
    func registerObservers(in router: inout RouterBuilder) {
        router.on(.post, "/v1/observers") { request, parameters in
            let body = try jsonBody(
                request, allowed: ["name", "lease", "retainObserved", "replay", "client", "onRemove", "deliver"])
            let defaults = ObserverSettings()
            let token = Command.newToken()
            let deliver = try deliveryRequest(body["deliver"])
            return try execute(
                request, parameters.caller,
                .createObserver(
                    id: Command.newID("obs_"), tokenHash: TokenHash.of(token), name: try body.string("name"),
                    lease: try body.int("lease") ?? defaults.lease,
                    retainObserved: try body.bool("retainObserved") ?? defaults.retainObserved,
                    replay: try body.int("replay") ?? defaults.replay, client: try body.string("client"),
                    onRemove: body["onRemove"], deliver: deliver),
                // Shown once, here: the state keeps its hash only (and, under an idempotency key, this answer);
                // the webhook secret (section 16) likewise.
                answerMembers: (["token": .string(token)] as JSONObject).adding("deliver", deliver))
        }
        router.on(.get, "/v1/observers") { _, parameters in
            // A scoped token lists the observers it made (section 13).
            let observers: [JSON] = try store(parameters).observers().map {
                .object(withLiveDelivery($0.summaryJSON, of: $0.id))
            }
            return .json(["observers": .array(observers)])
        }
        router.on(.get, "/v1/observers/{id}") { _, parameters in
            let observer = try store(parameters).observer(parameters["id"])
            var members = observer.summaryJSON
            members["observations"] = .array(observer.registrations.map { .object($0.json) })
            members["subscriptions"] = .array(observer.subscriptionList.map { .object($0.json) })
            members["queries"] = .array(observer.queryList.map { .object($0.json) })
            members["onRemove"] = .array(observer.onRemove)
            return .json(.object(withLiveDelivery(members, of: observer.id)))
        }
        router.on(.delete, "/v1/observers/{id}") { request, parameters in
            try execute(request, parameters.caller, .deleteObserver(observer: parameters["id"]))
        }
        // Section 14: what DELETE does, for `navigator.sendBeacon` (which can only POST).
        router.on(.post, "/v1/observers/{id}/remove") { request, parameters in
            try execute(request, parameters.caller, .deleteObserver(observer: parameters["id"]))
        }
        router.on(.post, "/v1/observers/{id}/keepalive") { request, parameters in
            try execute(request, parameters.caller, .keepalive(observer: parameters["id"]))
        }
        router.on(.post, "/v1/observers/{id}/progress") { request, parameters in
            try execute(request, parameters.caller, .progress(observer: parameters["id"]))
        }
        registerObservations(in: &router)
    }

    private func registerObservations(in router: inout RouterBuilder) {
        router.on(.post, "/v1/observers/{id}/observations") { request, parameters in
            let body = try jsonBody(
                request, allowed: ["object", "keyPath", "keyPaths", "options", "context", "throttle"])
            let object = try body.required("object") { try body.string($0) }
            var keyPaths: [String] = []
            if let keyPath = try body.string("keyPath") { keyPaths.append(keyPath) }
            keyPaths += try body.strings("keyPaths") ?? []
            let options = try body.strings("options") ?? []
            _ = try ObservationOptions(names: options)  // an unknown option is refused first, with a suggestion
            return try execute(
                request, parameters.caller,
                .observe(
                    observer: parameters["id"], object: object, keyPaths: keyPaths, options: options,
                    context: body["context"], registrationIDs: keyPaths.map { _ in Command.newID("reg_") },
                    throttle: try body.int("throttle")))
        }
        router.on(.get, "/v1/observers/{id}/observations") { _, parameters in
            .json([
                "observations": .array(
                    try store(parameters).observer(parameters["id"]).registrations.map { .object($0.json) })
            ])
        }
        router.on(.delete, "/v1/observers/{id}/observations/{registration}") { request, parameters in
            try execute(
                request, parameters.caller,
                .unobserve(
                    observer: parameters["id"], registration: parameters["registration"], object: nil, keyPath: nil))
        }
        router.on(.delete, "/v1/observers/{id}/observations") { request, parameters in
            let keyPath = request.stringQuery("keyPath")
            if let keyPath { _ = try KeyPath(keyPath) }  // not a key path: 400, never a look-alike match
            return try execute(
                request, parameters.caller,
                .unobserve(
                    observer: parameters["id"], registration: nil, object: try request.idQuery("object"),
                    keyPath: keyPath))
        }
    }
}
