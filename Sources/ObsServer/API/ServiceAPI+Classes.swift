import ObservationCore

extension ServiceAPI {
    func registerClasses(in router: inout RouterBuilder) {
        router.on(.get, "/v1/classes") { _, parameters in
            let classes: [JSON] = try store(parameters).classes().map { .object($0.json) }
            return .json(["classes": .array(classes)])
        }
        router.on(.put, "/v1/classes/{name}") { request, parameters in
            let body = try jsonBody(request, allowed: ["properties"])
            return try execute(
                request, parameters.caller, .defineClass(name: parameters["name"], definition: .object(body.members)))
        }
        router.on(.get, "/v1/classes/{name}") { _, parameters in
            .json(.object(try store(parameters).classInfo(parameters["name"]).json))
        }
        router.on(.delete, "/v1/classes/{name}") { request, parameters in
            try execute(request, parameters.caller, .deleteClass(name: parameters["name"]))
        }
    }
}

extension ClassSnapshot {
    /// `{"name", "properties", "revision", "objects"}`.
    var json: JSONObject {
        var members: JSONObject = ["name": .string(schema.name)]
        members["properties"] = schema.json["properties"]
        members["revision"] = .int(revision)
        members["objects"] = .int(objectCount)
        return members
    }
}
