import ObservationCore

extension ServiceAPI {
    /// Section 13: scoped tokens, the admin token's to make, change and revoke (`RouteAccess`).
    func registerTokens(in router: inout RouterBuilder) {
        router.on(.post, "/v1/tokens") { request, parameters in
            let body = try jsonBody(request, allowed: ["name", "scopes", "ttl", "client"])
            let secret = Command.newScopedSecret()
            return try execute(
                request, parameters.caller,
                .createToken(
                    id: Command.newID("tok_"), secretHash: TokenHash.of(secret), name: try body.string("name"),
                    scopes: try body.required("scopes"), ttl: try body.int("ttl"), client: try body.string("client")),
                // Shown once, here: the state keeps its hash only (and, under an idempotency key, this answer).
                answerMembers: ["token": .string(secret)])
        }
        router.on(.get, "/v1/tokens") { _, parameters in
            .json(["tokens": .array(try store(parameters).tokens().map { .object($0.json) })])
        }
        router.on(.get, "/v1/tokens/{id}") { _, parameters in
            .json(.object(try store(parameters).token(parameters["id"]).json))
        }
        router.on(.patch, "/v1/tokens/{id}") { request, parameters in
            let body = try jsonBody(request, allowed: ["scopes", "ttl"])
            return try execute(
                request, parameters.caller, .changeToken(id: parameters["id"], scopes: body["scopes"], ttl: body["ttl"])
            )
        }
        router.on(.delete, "/v1/tokens/{id}") { request, parameters in
            try execute(request, parameters.caller, .revokeToken(id: parameters["id"]))
        }
    }
}
