import ObservationCore

extension ServiceAPI {
    func registerObservers(in router: inout RouterBuilder) {
        router.on(.post, "/v1/observers") { request, _ in
            let body = try jsonBody(request, allowed: ["name", "lease", "retainObserved", "replay"])
            var settings = ObserverSettings()
            settings.name = try body.string("name")
            settings.lease = try body.int("lease") ?? settings.lease
            settings.replay = try body.int("replay") ?? settings.replay
            settings.retainObserved = try body.bool("retainObserved") ?? false
            let created = try store.createObserver(settings)
            timer.reschedule()
            var members = created.observer.summaryJSON
            members["token"] = .string(created.token)
            var response = HTTPResponse.json(.object(members), status: 201)
            response.headers.append(("Location", "/v1/observers/\(created.observer.id)"))
            return response
        }
        router.on(.get, "/v1/observers") { _, _ in
            let observers: [JSON] = store.observers().map { .object($0.summaryJSON) }
            return .json(["observers": .array(observers)])
        }
        router.on(.get, "/v1/observers/{id}") { _, parameters in
            let observer = try store.observer(parameters["id"])
            var members = observer.summaryJSON
            members["observations"] = .array(observer.registrations.map { .object($0.json) })
            members["subscriptions"] = .array(observer.subscriptionList.map { .object($0.json) })
            return .json(.object(members))
        }
        router.on(.delete, "/v1/observers/{id}") { _, parameters in
            _ = try store.deleteObserver(parameters["id"])
            return .noContent
        }
        router.on(.post, "/v1/observers/{id}/keepalive") { _, parameters in
            let expiresAt = try store.keepalive(parameters["id"])
            timer.reschedule()
            var response = HTTPResponse.json(["expiresAt": expiresAt.map { .string($0.rfc3339) } ?? .null])
            response.reportsDurableChange = false  // leases are not stored: nothing to wait for
            return response
        }
        registerObservations(in: &router)
    }

    private func registerObservations(in router: inout RouterBuilder) {
        router.on(.post, "/v1/observers/{id}/observations") { request, parameters in
            let body = try jsonBody(request, allowed: ["object", "keyPath", "keyPaths", "options", "context"])
            let object = try body.required("object", body.string)
            var keyPaths: [String] = []
            if let keyPath = try body.string("keyPath") { keyPaths.append(keyPath) }
            for path in try body.array("keyPaths") ?? [] {
                guard case .string(let text) = path else {
                    throw CoreError(.typeMismatch, "keyPaths must be strings, not a \(path.typeName)")
                }
                keyPaths.append(text)
            }
            var optionNames: [String] = []
            for option in try body.array("options") ?? [] {
                guard case .string(let name) = option else {
                    throw CoreError(.typeMismatch, "options must be strings, not a \(option.typeName)")
                }
                optionNames.append(name)
            }
            let result = try store.observe(
                observerID: parameters["id"], objectID: object, keyPaths: keyPaths,
                options: try ObservationOptions(names: optionNames), context: body["context"])
            let all = result.registrations.allSatisfy(\.deduplicated)
            var members: JSONObject = [
                "observations": .array(
                    result.registrations.map { registration, deduplicated in
                        var members = registration.json
                        if deduplicated { members["deduplicated"] = true }
                        return .object(members)
                    })
            ]
            if all { members["deduplicated"] = true }
            if let revision = result.revision { members["revision"] = .int(revision) }
            return .json(.object(members), status: all ? 200 : 201)
        }
        router.on(.get, "/v1/observers/{id}/observations") { _, parameters in
            .json(["observations": .array(try store.observer(parameters["id"]).registrations.map { .object($0.json) })])
        }
        router.on(.delete, "/v1/observers/{id}/observations/{registration}") { _, parameters in
            _ = try store.unobserve(observerID: parameters["id"], registrationID: parameters["registration"])
            return .noContent
        }
        router.on(.delete, "/v1/observers/{id}/observations") { request, parameters in
            let keyPath = request.stringQuery("keyPath")
            if let keyPath { _ = try KeyPath(keyPath) }  // not a key path: 400, never a look-alike match
            _ = try store.unobserve(
                observerID: parameters["id"], objectID: try request.idQuery("object"), keyPath: keyPath)
            return .noContent
        }
    }
}
