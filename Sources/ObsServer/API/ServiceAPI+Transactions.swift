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
        let id = try body.string("id")  // its alphabet is checked where the command applies
        var operations: [Command.Action] = []
        for (index, item) in try body.required("operations", { try body.array($0) }).enumerated() {
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
        func body(_ allowed: [String]) throws -> JSONBody {
            try JSONBody(members: members, allowed: allowed, context: "a '\(op)' operation")
        }
        switch op {
        case "set":
            let body = try body(OperationMembers.set)
            let (object, keyPath) = try Self.target(body)
            return try WriteBodies.setValue(object, keyPath, body)
        case "patch":
            let body = try body(OperationMembers.patch)
            return try WriteBodies.patch(try body.required("object") { try body.string($0) }, body)
        case "create":
            return try WriteBodies.createObject(try body(OperationMembers.create))
        case "mutate":
            let body = try body(OperationMembers.mutate)
            let (object, keyPath) = try Self.target(body)
            return try WriteBodies.mutate(object, keyPath, body)
        case "delete":
            let body = try body(OperationMembers.delete)
            return .deleteObject(object: try body.required("object") { try body.string($0) })
        case "post":
            return try WriteBodies.post(try body(OperationMembers.post))
        case "notify":
            let body = try body(OperationMembers.notify)
            return try WriteBodies.notify(try body.required("object") { try body.string($0) }, body)
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

extension ServiceAPI {
    /// An operation's `object` and `keyPath`: its single request's path.
    fileprivate static func target(_ body: JSONBody) throws -> (object: String, keyPath: String) {
        (try body.required("object") { try body.string($0) }, try body.required("keyPath") { try body.string($0) })
    }
}

/// The members an operation may have: `op`, the path's parts, its single request's body.
private enum OperationMembers {
    static let set = ["op", "object", "keyPath"] + WriteBodies.setMembers
    static let patch = ["op", "object"] + WriteBodies.patchMembers
    static let create = ["op"] + WriteBodies.createMembers
    static let mutate = ["op", "object", "keyPath"] + WriteBodies.mutateMembers
    static let delete = ["op", "object"]
    static let post = ["op"] + WriteBodies.postMembers
    static let notify = ["op", "object"] + WriteBodies.notifyMembers
}

extension TransactionResult {
    /// `{"revision", "id"?, "results": [...]}`: each result the body its single request answers.
    func write(to writer: inout JSONWriter) {
        writer.raw("{\"revision\":")
        writer.write(revision)
        if let id {
            writer.raw(",\"id\":")
            writer.write(id)
        }
        writer.raw(",\"results\":[")
        for (index, result) in results.enumerated() {
            if index > 0 { writer.raw(",") }
            switch result {
            case .done: writer.raw("{}")
            case .created(let snapshot): writer.write(.object(snapshot.json))
            case .releasePending(let retainedBy):
                writer.write(["state": "releasePending", "retainedBy": .array(retainedBy.map(JSON.string))])
            case .delivered(let count):
                writer.raw("{\"delivered\":")
                writer.write(count)
                writer.raw("}")
            }
        }
        writer.raw("]}")
    }
}
