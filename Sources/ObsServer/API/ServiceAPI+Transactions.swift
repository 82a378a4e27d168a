import ObservationCore

extension ServiceAPI {
    func registerTransactions(in router: inout RouterBuilder) {
        router.on(.post, "/v1/transactions") { request, parameters in
            let body = try jsonBody(request, allowed: ["id", "expect", "operations"])
            let transaction = try Self.transaction(body)
            return try execute(request, parameters.caller, .transaction(transaction), transactionID: transaction.id)
        }
    }

    /// A transaction's body (section 15): each operation read as its single request's body,
    /// with the path's parts as members; a malformed one answers with its index.
    static func transaction(_ body: JSONBody) throws -> Transaction {
        let id = try body.string("id")
        if let id, !Names.isValidID(id) {
            throw CoreError(
                .invalidRequest, "a transaction's id is 1–128 of A–Z a–z 0–9 . _ ~ -", details: ["field": "id"])
        }
        var operations: [Command.Action] = []
        for (index, item) in try body.required("operations", body.array).enumerated() {
            do {
                operations.append(try operation(item))
            } catch let error as CoreError {
                throw error.at("operation", index)
            }
        }
        var expect: [Transaction.Expectation] = []
        for (index, item) in (try body.array("expect") ?? []).enumerated() {
            guard let expectation = Transaction.Expectation(json: item) else {
                throw CoreError(
                    .invalidRequest,
                    "an expectation is {\"object\": id, and one of \"ifRevision\": n, \"exists\": bool, \"where\": […]}"
                ).at("expect", index)
            }
            expect.append(expectation)
        }
        return Transaction(id: id, expect: expect, operations: operations)
    }

    /// One operation: `{"op", …}` as the command its single request makes.
    private static func operation(_ item: JSON) throws -> Command.Action {
        guard case .object(let members) = item else {
            throw CoreError(.invalidRequest, "an operation is an object with \"op\"")
        }
        guard case .string(let op)? = members["op"] else {
            throw CoreError(
                .invalidRequest, "an operation's \"op\" is one of \(Transaction.operationKinds.joined(separator: ", "))"
            )
        }
        func body(_ allowed: [String], path: [String] = []) throws -> JSONBody {
            try JSONBody(members: members, allowed: ["op"] + path + allowed, context: "a '\(op)' operation")
        }
        switch op {
        case "set":
            let body = try body(WriteBodies.setMembers, path: ["object", "keyPath"])
            return try WriteBodies.setValue(
                try body.required("object", body.string), try body.required("keyPath", body.string), body)
        case "patch":
            let body = try body(WriteBodies.patchMembers, path: ["object"])
            return try WriteBodies.patch(try body.required("object", body.string), body)
        case "create":
            return try WriteBodies.createObject(try body(WriteBodies.createMembers))
        case "mutate":
            let body = try body(WriteBodies.mutateMembers, path: ["object", "keyPath"])
            return try WriteBodies.mutate(
                try body.required("object", body.string), try body.required("keyPath", body.string), body)
        case "delete":
            let body = try body([], path: ["object"])
            return .deleteObject(object: try body.required("object", body.string))
        case "post":
            return try WriteBodies.post(try body(WriteBodies.postMembers))
        case "notify":
            let body = try body(WriteBodies.notifyMembers, path: ["object"])
            return try WriteBodies.notify(try body.required("object", body.string), body)
        default:
            var message = "unknown operation '\(op)'"
            var details: JSONObject = ["op": .string(op)]
            if let suggestion = Suggestion.closest(to: op, in: Transaction.operationKinds) {
                message += "; did you mean '\(suggestion)'?"
                details["suggestion"] = .string(suggestion)
            }
            message += " (the operations: \(Transaction.operationKinds.joined(separator: " ")))"
            throw CoreError(.invalidRequest, message, details: details)
        }
    }
}

extension TransactionResult {
    /// `{"revision", "id"?, "results": [...]}`: each result the body its single request answers.
    var json: JSON {
        let results: [JSON] = results.map { result in
            switch result {
            case .done: [:]
            case .created(let snapshot): .object(snapshot.json)
            case .releasePending(let retainedBy):
                ["state": "releasePending", "retainedBy": .array(retainedBy.map(JSON.string))]
            case .delivered(let count): ["delivered": .int(count)]
            }
        }
        var members: JSONObject = ["revision": .int(revision)]
        if let id { members["id"] = .string(id) }
        members["results"] = .array(results)
        return .object(members)
    }
}
