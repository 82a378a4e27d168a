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
            let body = try jsonBody(request, allowed: WriteBodies.setMembers)
            return try execute(
                request, parameters.caller, try WriteBodies.setValue(parameters["id"], parameters["keyPath"], body))
        }
        router.on(.post, "/v1/objects/{id}/values/{keyPath}/mutations") { request, parameters in
            let body = try jsonBody(request, allowed: WriteBodies.mutateMembers)
            return try execute(
                request, parameters.caller, try WriteBodies.mutate(parameters["id"], parameters["keyPath"], body))
        }
        router.on(.post, "/v1/objects/{id}/notify") { request, parameters in
            let body = try jsonBody(request, allowed: WriteBodies.notifyMembers)
            return try execute(request, parameters.caller, try WriteBodies.notify(parameters["id"], body))
        }
    }
}
