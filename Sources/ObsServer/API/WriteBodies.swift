import ObservationCore

/// The write requests' bodies as the commands they ask for: one decoding per kind of write,
/// shared by its route and by a transaction's operation of that kind (section 15: "each is
/// what its single request does"). The path's parts (object, key path) come in apart.
enum WriteBodies {
    static let createMembers = ["id", "class", "values", "owner"]
    static let patchMembers = ["values", "ifRevision"]
    static let setMembers = ["value", "ifRevision"]
    static let mutateMembers = ["kind", "indexes", "values", "ifRevision"]
    static let notifyMembers = ["keyPaths"]
    static let postMembers = ["name", "object", "userInfo", "posting", "coalesce"]

    /// `POST /v1/objects`
    static func createObject(_ body: JSONBody) throws -> Command.Action {
        .createObject(
            id: try body.string("id"), className: try body.string("class"), values: try body.object("values") ?? [:],
            generatedID: Command.newID("obj_"), owner: try body.string("owner"))
    }

    /// `PATCH /v1/objects/{id}`
    static func patch(_ object: String, _ body: JSONBody) throws -> Command.Action {
        .patch(
            object: object, values: try body.required("values") { try body.object($0) },
            ifRevision: try body.int("ifRevision"))
    }

    /// `PUT /v1/objects/{id}/values/{keyPath}`
    static func setValue(_ object: String, _ keyPath: String, _ body: JSONBody) throws -> Command.Action {
        .setValue(
            object: object, keyPath: keyPath, value: try body.required("value"), ifRevision: try body.int("ifRevision"))
    }

    /// `POST /v1/objects/{id}/values/{keyPath}/mutations`
    static func mutate(_ object: String, _ keyPath: String, _ body: JSONBody) throws -> Command.Action {
        let kind = try body.required("kind") { try body.string($0) }
        var indexes: [Int] = []
        for index in try body.required("indexes", { try body.array($0) }) {
            guard case .int(let value) = index else {
                throw CoreError(.typeMismatch, "indexes must be integers, not \(index.typeNameWithArticle)")
            }
            indexes.append(value)
        }
        return .mutate(
            object: object, keyPath: keyPath, kind: kind, indexes: indexes, values: try body.array("values") ?? [],
            ifRevision: try body.int("ifRevision"))
    }

    /// `POST /v1/objects/{id}/notify`
    static func notify(_ object: String, _ body: JSONBody) throws -> Command.Action {
        .notify(object: object, keyPaths: try body.required("keyPaths") { try body.strings($0) })
    }

    /// `POST /v1/notifications`
    static func post(_ body: JSONBody) throws -> Command.Action {
        let name = try body.required("name") { try body.string($0) }
        let posting = try body.string("posting") ?? PostingStyle.now.rawValue
        guard PostingStyle(rawValue: posting) != nil else {
            throw CoreError(.invalidRequest, "posting must be now, asap or idle, not '\(posting)'")
        }
        var coalesce: [String] = []
        for field in try body.array("coalesce") ?? [] {
            guard case .string(let text) = field else {
                throw CoreError(.typeMismatch, "coalesce must list \"name\" and/or \"object\"")
            }
            coalesce.append(text)
        }
        return .post(
            name: name, object: try body.string("object"), userInfo: try body.object("userInfo").map(JSON.object),
            posting: posting, coalesce: coalesce)
    }
}
