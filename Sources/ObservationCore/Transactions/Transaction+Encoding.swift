// MARK: - A transaction in the command encoding: its operations as the actions they are

extension Transaction {
    /// Decodes the `transaction` command's fields (`id`, `expect`, `operations`).
    init(_ fields: CommandFields) throws(CommandDecodingError) {
        var operations: [Command.Action] = []
        for item in try fields.array("operations") {
            guard case .object(let members) = item else {
                throw CommandDecodingError(description: "a transaction's operations are objects")
            }
            let operation = CommandFields(members)
            let action = try Command.Action(kind: try operation.string("a"), operation)
            guard action.isTransactionOperation else {
                throw CommandDecodingError(description: "'\(action.kind)' is not a transaction's operation")
            }
            operations.append(action)
        }
        var expect: [Transaction.Expectation] = []
        let entries: [JSON] = if case .array(let items)? = fields.optionalJSON("expect") { items } else { [] }
        for item in entries {
            guard let expectation = Transaction.Expectation(json: item) else {
                throw CommandDecodingError(description: "an expectation is {object, ifRevision | exists | where}")
            }
            expect.append(expectation)
        }
        self.init(id: try fields.optionalString("id"), expect: expect, operations: operations)
    }
}

extension Command.Action {
    /// Whether a transaction may hold it (section 15's seven kinds).
    var isTransactionOperation: Bool {
        switch self {
        case .setValue, .patch, .createObject, .mutate, .deleteObject, .post, .notify: true
        default: false
        }
    }

    /// `{"a": kind, …fields}`: an operation inside an encoded transaction.
    var encodedFields: JSONObject {
        var members: JSONObject = ["a": .string(kind)]
        forEachField { name, value in
            if let value { members["\(name)"] = value }
        }
        return members
    }
}

extension Transaction.Expectation {
    /// `{"object", "ifRevision" | "exists" | "where"}`, as the request spells it.
    public var json: JSON {
        switch condition {
        case .ifRevision(let revision): ["object": .string(object), "ifRevision": .int(revision)]
        case .exists(let exists): ["object": .string(object), "exists": .bool(exists)]
        case .matches(let conditions): ["object": .string(object), "where": conditions]
        }
    }

    /// The entry `json` made; nil for anything else (one condition per entry).
    public init?(json: JSON) {
        guard case .object(let members) = json, case .string(let object)? = members["object"], members.count == 2
        else { return nil }
        switch (members["ifRevision"], members["exists"], members["where"]) {
        case (.int(let revision)?, nil, nil): self.init(object: object, .ifRevision(revision))
        case (nil, .bool(let exists)?, nil): self.init(object: object, .exists(exists))
        case (nil, nil, .array(let conditions)?): self.init(object: object, .matches(.array(conditions)))
        default: return nil
        }
    }
}
