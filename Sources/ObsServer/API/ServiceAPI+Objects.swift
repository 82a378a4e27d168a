import ObservationCore

extension ServiceAPI {
    /// The largest page `GET /v1/objects` returns.
    static let maxPageSize = 1000

    func registerObjects(in router: inout RouterBuilder) {
        router.on(.post, "/v1/objects") { request, parameters in
            let body = try jsonBody(request, allowed: WriteBodies.createMembers)
            return try execute(request, parameters.caller, try WriteBodies.createObject(body))
        }
        router.on(.get, "/v1/objects") { request, parameters in
            let page = try store(parameters).objects(
                className: try request.idQuery("class"),
                limit: try request.intQuery("limit", default: 100, in: 1...Self.maxPageSize),
                after: try request.idQuery("after"))
            let objects: [JSON] = page.objects.map { .object($0.json) }
            return .json(["objects": .array(objects), "next": page.next.map(JSON.string) ?? .null])
        }
        router.on(.get, "/v1/objects/{id}") { _, parameters in
            .json(.object(try store(parameters).object(parameters["id"]).json))
        }
        router.on(.patch, "/v1/objects/{id}") { request, parameters in
            let body = try jsonBody(request, allowed: WriteBodies.patchMembers)
            return try execute(request, parameters.caller, try WriteBodies.patch(parameters["id"], body))
        }
        router.on(.delete, "/v1/objects/{id}") { request, parameters in
            try execute(request, parameters.caller, .deleteObject(object: parameters["id"]))
        }
    }
}
