import ObservationCore

extension ServiceAPI {
    /// Section 12: queries as registrations of an observer, and `POST /v1/query`.
    func registerQueries(in router: inout RouterBuilder) {
        router.on(.post, "/v1/observers/{id}/queries") { request, parameters in
            let body = try jsonBody(request, allowed: Self.definitionMembers + ["options", "context", "throttle"])
            let options = try body.strings("options") ?? []
            _ = try ObservationOptions(names: options)  // an unknown option is refused first, with a suggestion
            return try execute(
                request, parameters.caller,
                .query(
                    observer: parameters["id"], definition: Self.definition(of: body), options: options,
                    context: body["context"], throttle: try body.int("throttle"), queryID: Command.newID("qry_")))
        }
        router.on(.get, "/v1/observers/{id}/queries") { _, parameters in
            .json(["queries": .array(try store(parameters).queries(of: parameters["id"]).map { .object($0.json) })])
        }
        router.on(.get, "/v1/observers/{id}/queries/{query}") { _, parameters in
            .json(.object(try store(parameters).query(parameters["query"], of: parameters["id"]).json))
        }
        router.on(.delete, "/v1/observers/{id}/queries/{query}") { request, parameters in
            try execute(request, parameters.caller, .unquery(observer: parameters["id"], query: parameters["query"]))
        }
        router.on(.post, "/v1/query") { request, parameters in
            let body = try jsonBody(request, allowed: Self.definitionMembers)
            let answer = try store(parameters).answerQuery(Self.definition(of: body))
            let objects: [JSON] = answer.objects.map { .object(["id": .string($0.id), "values": .object($0.values)]) }
            return .json(["objects": .array(objects), "total": .int(answer.total), "revision": .int(answer.revision)])
        }
    }

    private static let definitionMembers = ["class", "where", "orderBy", "limit", "select"]

    /// The definition's members of a request body (the core checks them).
    private static func definition(of body: JSONBody) -> JSON {
        .object(JSONObject(definitionMembers.compactMap { key in body[key].map { (key, $0) } }))
    }
}
