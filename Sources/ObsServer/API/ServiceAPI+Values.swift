import ObservationCore

extension ServiceAPI {
    func registerValues(in router: inout RouterBuilder) {
        router.on(.get, "/v1/objects/{id}/values/{keyPath}") { _, parameters in
            let (value, revision) = try store(parameters).value(
                of: parameters["id"], at: parameters["keyPath"])
            return .json { writer in
                writer.raw("{\"keyPath\":")
                writer.write(parameters["keyPath"])
                writer.raw(",\"value\":")
                writer.write(value)
                writer.raw(",\"revision\":")
                writer.write(revision)
                writer.raw("}")
            }
        }
        router.on(.put, "/v1/objects/{id}/values/{keyPath}") { request, parameters in
            let body = try jsonBody(request, allowed: ["value", "ifRevision"])
            return try execute(
                request, parameters.caller,
                .setValue(
                    object: parameters["id"], keyPath: parameters["keyPath"], value: try body.required("value"),
                    ifRevision: try body.int("ifRevision")))
        }
        router.on(.post, "/v1/objects/{id}/values/{keyPath}/mutations") { request, parameters in
            let body = try jsonBody(request, allowed: ["kind", "indexes", "values", "ifRevision"])
            let kind = try body.required("kind", body.string)
            var indexes: [Int] = []
            for index in try body.required("indexes", body.array) {
                guard case .int(let value) = index else {
                    throw CoreError(.typeMismatch, "indexes must be integers, not \(index.typeNameWithArticle)")
                }
                indexes.append(value)
            }
            return try execute(
                request, parameters.caller,
                .mutate(
                    object: parameters["id"], keyPath: parameters["keyPath"], kind: kind, indexes: indexes,
                    values: try body.array("values") ?? [], ifRevision: try body.int("ifRevision")))
        }
        router.on(.post, "/v1/objects/{id}/notify") { request, parameters in
            let body = try jsonBody(request, allowed: ["keyPaths"])
            return try execute(
                request, parameters.caller,
                .notify(object: parameters["id"], keyPaths: try body.required("keyPaths", body.strings)))
        }
    }
}
