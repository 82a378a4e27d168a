import ObservationCore

extension ServiceAPI {
    func registerValues(in router: inout RouterBuilder) {
        router.on(.get, "/v1/objects/{id}/values/{keyPath}") { _, parameters in
            let (value, revision) = try store.value(of: parameters["id"], at: parameters["keyPath"])
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
            return .revision(
                try store.setValue(
                    try body.required("value"), of: parameters["id"], at: parameters["keyPath"],
                    ifRevision: try body.int("ifRevision")))
        }
        router.on(.post, "/v1/objects/{id}/values/{keyPath}/mutations") { request, parameters in
            let body = try jsonBody(request, allowed: ["kind", "indexes", "values", "ifRevision"])
            let kindName = try body.required("kind", body.string)
            guard let kind = ArrayMutation.Kind(rawValue: kindName) else {
                throw CoreError(.invalidRequest, "kind must be insertion, removal or replacement, not '\(kindName)'")
            }
            var indexes: [Int] = []
            for index in try body.required("indexes", body.array) {
                guard case .int(let value) = index else {
                    throw CoreError(.typeMismatch, "indexes must be integers, not a \(index.typeName)")
                }
                indexes.append(value)
            }
            let mutation = try ArrayMutation(kind: kind, indexes: indexes, values: try body.array("values") ?? [])
            return .revision(
                try store.mutate(
                    parameters["id"], at: parameters["keyPath"], mutation, ifRevision: try body.int("ifRevision")))
        }
        router.on(.post, "/v1/objects/{id}/notify") { request, parameters in
            let body = try jsonBody(request, allowed: ["keyPaths"])
            var keyPaths: [String] = []
            for path in try body.required("keyPaths", body.array) {
                guard case .string(let text) = path else {
                    throw CoreError(.typeMismatch, "keyPaths must be strings, not a \(path.typeName)")
                }
                keyPaths.append(text)
            }
            return .revision(try store.notify(parameters["id"], keyPaths: keyPaths))
        }
    }
}
