// MARK: - The command encoding (version 1): the project's own compact JSON

/// Why bytes are not a command this server can apply.
public struct CommandDecodingError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

extension Command {
    /// The encoding's version: a reader refuses any other.
    public static let encodingVersion = 1

    /// `{"v":1,"t":<ms>,"a":"<kind>", …the action's fields…}`; absent optionals are left out.
    public func encoded() -> [UInt8] {
        JSONWriter.encode { writer in
            writer.raw("{\"v\":1,\"t\":")
            writer.write(Int(time.milliseconds))
            writer.raw(",\"a\":")
            writer.write(action.kind)
            action.forEachField { name, value in
                guard let value else { return }
                writer.raw(",\"")
                writer.raw(name)  // a literal field name: nothing to escape
                writer.raw("\":")
                writer.write(value)
            }
            if let by {
                writer.raw(",\"by\":")
                writer.write(by)
            }
            if let principal = principal.json {
                writer.raw(",\"principal\":")
                writer.write(principal)
            }
            if let idempotency {
                writer.raw(",\"idempotency\":")
                writer.write(
                    [
                        "key": .string(idempotency.key), "fingerprint": .string(idempotency.fingerprint),
                        "answerMembers": .object(idempotency.answerMembers),
                    ])
            }
            writer.raw("}")
        }
    }

    /// Decodes `encoded()`'s output; throws for anything else.
    public init(decoding bytes: [UInt8]) throws(CommandDecodingError) {
        let document: JSON
        do {
            document = try JSONParser.parse(bytes)
        } catch {
            throw CommandDecodingError(description: "not JSON: \(error.message)")
        }
        guard case .object(let members) = document else {
            throw CommandDecodingError(description: "a command is a JSON object")
        }
        let fields = CommandFields(members)
        guard try fields.int("v") == Self.encodingVersion else {
            throw CommandDecodingError(description: "command encoding version \(members["v"] ?? .null) is not 1")
        }
        let action = try Action(kind: try fields.string("a"), fields)
        self.init(
            time: Timestamp(milliseconds: Int64(try fields.int("t"))), action,
            as: try Self.principal(fields.optionalJSON("principal"), of: action), by: try fields.optionalString("by"),
            idempotency: try Self.claim(fields.optionalJSON("idempotency")))
    }

    /// Left out, it is the server's for a background change and the admin's for any other.
    private static func principal(_ json: JSON?, of action: Action) throws(CommandDecodingError) -> Principal {
        guard let json else { return action.isBackground ? .server : .admin }
        guard let principal = Principal(json: json) else {
            throw CommandDecodingError(description: "a principal is a token, an observer or a JWT with its scopes")
        }
        return principal
    }

    private static func claim(_ json: JSON?) throws(CommandDecodingError) -> IdempotencyClaim? {
        guard let json else { return nil }
        guard case .object(let members) = json, case .string(let key)? = members["key"],
            case .string(let fingerprint)? = members["fingerprint"],
            case .object(let answerMembers)? = members["answerMembers"]
        else { throw CommandDecodingError(description: "an idempotency claim has key, fingerprint and answerMembers") }
        return IdempotencyClaim(key: key, fingerprint: fingerprint, answerMembers: answerMembers)
    }
}

extension Command.Action {
    /// Calls `field` with each of the action's fields, in encoding order (nil: absent); no
    /// array in between (a command is encoded for every durable write).
    func forEachField(_ field: (StaticString, JSON?) -> Void) {
        switch self {
        case .defineClass(let name, let definition):
            field("name", .string(name))
            field("definition", definition)
        case .deleteClass(let name):
            field("name", .string(name))
        case .createObject(let id, let className, let values, let generatedID, let owner):
            field("id", id.map(JSON.string))
            field("class", className.map(JSON.string))
            field("values", .object(values))
            field("generatedId", .string(generatedID))
            field("owner", owner.map(JSON.string))
        case .patch(let object, let values, let ifRevision):
            field("object", .string(object))
            field("values", .object(values))
            field("ifRevision", ifRevision.map(JSON.int))
        case .deleteObject(let object):
            field("object", .string(object))
        case .setValue(let object, let keyPath, let value, let ifRevision):
            field("object", .string(object))
            field("keyPath", .string(keyPath))
            field("value", value)
            field("ifRevision", ifRevision.map(JSON.int))
        case .mutate(let object, let keyPath, let kind, let indexes, let values, let ifRevision):
            field("object", .string(object))
            field("keyPath", .string(keyPath))
            field("kind", .string(kind))
            field("indexes", .array(indexes.map(JSON.int)))
            field("values", .array(values))
            field("ifRevision", ifRevision.map(JSON.int))
        case .notify(let object, let keyPaths):
            field("object", .string(object))
            field("keyPaths", .array(keyPaths.map(JSON.string)))
        case .transaction(let transaction):
            field("id", transaction.id.map(JSON.string))
            field("expect", transaction.expect.isEmpty ? nil : .array(transaction.expect.map(\.json)))
            field("operations", .array(transaction.operations.map { .object($0.encodedFields) }))
        case .createObserver(
            let id, let tokenHash, let name, let lease, let retainObserved, let replay, let client, let onRemove,
            let deliver):
            field("id", .string(id))
            field("tokenHash", .string(tokenHash))
            field("name", name.map(JSON.string))
            field("lease", .int(lease))
            field("retainObserved", .bool(retainObserved))
            field("replay", .int(replay))
            field("client", client.map(JSON.string))
            field("onRemove", onRemove)
            field("deliver", deliver)
        case .deleteObserver(let observer), .keepalive(let observer), .progress(let observer):
            field("observer", .string(observer))
        case .observe(
            let observer, let object, let keyPaths, let options, let context, let registrationIDs, let throttle):
            field("observer", .string(observer))
            field("object", .string(object))
            field("keyPaths", .array(keyPaths.map(JSON.string)))
            field("options", .array(options.map(JSON.string)))
            field("context", context)
            field("registrationIds", .array(registrationIDs.map(JSON.string)))
            field("throttle", throttle.map(JSON.int))
        case .query(let observer, let definition, let options, let context, let throttle, let queryID):
            field("observer", .string(observer))
            field("definition", definition)
            field("options", .array(options.map(JSON.string)))
            field("context", context)
            field("throttle", throttle.map(JSON.int))
            field("queryId", .string(queryID))
        case .unquery(let observer, let query):
            field("observer", .string(observer))
            field("query", .string(query))
        case .unobserve(let observer, let registration, let object, let keyPath):
            field("observer", .string(observer))
            field("registration", registration.map(JSON.string))
            field("object", object.map(JSON.string))
            field("keyPath", keyPath.map(JSON.string))
        case .subscribe(let observer, let name, let object, let subscriptionID):
            field("observer", .string(observer))
            field("name", name.map(JSON.string))
            field("object", object.map(JSON.string))
            field("subscriptionId", .string(subscriptionID))
        case .unsubscribe(let observer, let subscription, let name, let object):
            field("observer", .string(observer))
            field("subscription", subscription.map(JSON.string))
            field("name", name.map(JSON.string))
            field("object", object.map(JSON.string))
        case .post(let name, let object, let userInfo, let posting, let coalesce):
            field("name", .string(name))
            field("object", object.map(JSON.string))
            field("userInfo", userInfo)
            field("posting", .string(posting))
            field("coalesce", .array(coalesce.map(JSON.string)))
        case .createToken(let id, let secretHash, let name, let scopes, let ttl, let client):
            field("id", .string(id))
            field("secretHash", .string(secretHash))
            field("name", name.map(JSON.string))
            field("scopes", scopes)
            field("ttl", ttl.map(JSON.int))
            field("client", client.map(JSON.string))
        case .changeToken(let id, let scopes, let ttl):
            field("id", .string(id))
            field("scopes", scopes)
            field("ttl", ttl)
        case .revokeToken(let id):
            field("id", .string(id))
        case .expireLeases, .restart, .flushThrottled, .expireTokens: break
        case .deliverQueued(let posting):
            field("posting", .string(posting))
        case .openStream(let observer, let holder), .closeStream(let observer, let holder):
            field("observer", observer.map(JSON.string))
            field("holder", holder.map(JSON.string))
        case .nodeDown(let holder):
            field("holder", .string(holder))
        case .acknowledge(let observer, let through):
            field("observer", .string(observer))
            field("through", .int(through))
        }
    }

    init(kind: String, _ fields: CommandFields) throws(CommandDecodingError) {
        switch kind {
        case "defineClass":
            self = .defineClass(name: try fields.string("name"), definition: try fields.json("definition"))
        case "deleteClass": self = .deleteClass(name: try fields.string("name"))
        case "createObject":
            self = .createObject(
                id: try fields.optionalString("id"), className: try fields.optionalString("class"),
                values: try fields.object("values"), generatedID: try fields.string("generatedId"),
                owner: try fields.optionalString("owner"))
        case "patch":
            self = .patch(
                object: try fields.string("object"), values: try fields.object("values"),
                ifRevision: try fields.optionalInt("ifRevision"))
        case "deleteObject": self = .deleteObject(object: try fields.string("object"))
        case "setValue":
            self = .setValue(
                object: try fields.string("object"), keyPath: try fields.string("keyPath"),
                value: try fields.json("value"), ifRevision: try fields.optionalInt("ifRevision"))
        case "mutate":
            self = .mutate(
                object: try fields.string("object"), keyPath: try fields.string("keyPath"),
                kind: try fields.string("kind"), indexes: try fields.ints("indexes"),
                values: try fields.array("values"),
                ifRevision: try fields.optionalInt("ifRevision"))
        case "notify": self = .notify(object: try fields.string("object"), keyPaths: try fields.strings("keyPaths"))
        case "transaction": self = .transaction(try Transaction(fields))
        case "createObserver":
            self = .createObserver(
                id: try fields.string("id"), tokenHash: try fields.string("tokenHash"),
                name: try fields.optionalString("name"), lease: try fields.int("lease"),
                retainObserved: try fields.bool("retainObserved"), replay: try fields.int("replay"),
                client: try fields.optionalString("client"), onRemove: fields.optionalJSON("onRemove"),
                deliver: fields.optionalJSON("deliver"))
        case "deleteObserver": self = .deleteObserver(observer: try fields.string("observer"))
        case "keepalive": self = .keepalive(observer: try fields.string("observer"))
        case "progress": self = .progress(observer: try fields.string("observer"))
        case "observe":
            self = .observe(
                observer: try fields.string("observer"), object: try fields.string("object"),
                keyPaths: try fields.strings("keyPaths"), options: try fields.strings("options"),
                context: fields.optionalJSON("context"), registrationIDs: try fields.strings("registrationIds"),
                throttle: try fields.optionalInt("throttle"))
        case "unobserve":
            self = .unobserve(
                observer: try fields.string("observer"), registration: try fields.optionalString("registration"),
                object: try fields.optionalString("object"), keyPath: try fields.optionalString("keyPath"))
        case "query":
            self = .query(
                observer: try fields.string("observer"), definition: try fields.json("definition"),
                options: try fields.strings("options"), context: fields.optionalJSON("context"),
                throttle: try fields.optionalInt("throttle"), queryID: try fields.string("queryId"))
        case "unquery": self = .unquery(observer: try fields.string("observer"), query: try fields.string("query"))
        case "subscribe":
            self = .subscribe(
                observer: try fields.string("observer"), name: try fields.optionalString("name"),
                object: try fields.optionalString("object"), subscriptionID: try fields.string("subscriptionId"))
        case "unsubscribe":
            self = .unsubscribe(
                observer: try fields.string("observer"), subscription: try fields.optionalString("subscription"),
                name: try fields.optionalString("name"), object: try fields.optionalString("object"))
        case "post":
            self = .post(
                name: try fields.string("name"), object: try fields.optionalString("object"),
                userInfo: fields.optionalJSON("userInfo"), posting: try fields.string("posting"),
                coalesce: try fields.strings("coalesce"))
        case "createToken":
            self = .createToken(
                id: try fields.string("id"), secretHash: try fields.string("secretHash"),
                name: try fields.optionalString("name"), scopes: try fields.json("scopes"),
                ttl: try fields.optionalInt("ttl"), client: try fields.optionalString("client"))
        case "changeToken":
            self = .changeToken(
                id: try fields.string("id"), scopes: fields.optionalJSON("scopes"), ttl: fields.optionalJSON("ttl"))
        case "revokeToken": self = .revokeToken(id: try fields.string("id"))
        case "expireTokens": self = .expireTokens
        case "expireLeases": self = .expireLeases
        case "flushThrottled": self = .flushThrottled
        case "deliverQueued": self = .deliverQueued(posting: try fields.string("posting"))
        case "openStream":
            self = .openStream(
                observer: try fields.optionalString("observer"), holder: try fields.optionalString("holder"))
        case "closeStream":
            self = .closeStream(
                observer: try fields.optionalString("observer"), holder: try fields.optionalString("holder"))
        case "restart": self = .restart
        case "nodeDown": self = .nodeDown(holder: try fields.string("holder"))
        case "acknowledge":
            self = .acknowledge(observer: try fields.string("observer"), through: try fields.int("through"))
        default: throw CommandDecodingError(description: "unknown command '\(kind)'")
        }
    }
}

/// Typed access to a decoded command's members; a missing or mistyped one is an error.
struct CommandFields {
    let members: JSONObject

    init(_ members: JSONObject) { self.members = members }

    private func missing(_ name: String, _ type: String) -> CommandDecodingError {
        CommandDecodingError(
            description: "'\(name)' must be \(type), not \(members[name]?.typeNameWithArticle ?? "absent")")
    }

    func json(_ name: String) throws(CommandDecodingError) -> JSON {
        guard let value = members[name] else { throw missing(name, "present") }
        return value
    }

    func optionalJSON(_ name: String) -> JSON? { members[name] }

    func string(_ name: String) throws(CommandDecodingError) -> String {
        guard case .string(let value)? = members[name] else { throw missing(name, "a string") }
        return value
    }

    func optionalString(_ name: String) throws(CommandDecodingError) -> String? {
        guard members[name] != nil else { return nil }
        return try string(name)
    }

    func int(_ name: String) throws(CommandDecodingError) -> Int {
        guard case .int(let value)? = members[name] else { throw missing(name, "an integer") }
        return value
    }

    func optionalInt(_ name: String) throws(CommandDecodingError) -> Int? {
        guard members[name] != nil else { return nil }
        return try int(name)
    }

    func bool(_ name: String) throws(CommandDecodingError) -> Bool {
        guard case .bool(let value)? = members[name] else { throw missing(name, "a boolean") }
        return value
    }

    func object(_ name: String) throws(CommandDecodingError) -> JSONObject {
        guard case .object(let value)? = members[name] else { throw missing(name, "an object") }
        return value
    }

    func array(_ name: String) throws(CommandDecodingError) -> [JSON] {
        guard case .array(let value)? = members[name] else { throw missing(name, "an array") }
        return value
    }

    func strings(_ name: String) throws(CommandDecodingError) -> [String] {
        var strings: [String] = []
        for element in try array(name) {
            guard case .string(let text) = element else { throw missing(name, "an array of strings") }
            strings.append(text)
        }
        return strings
    }

    func ints(_ name: String) throws(CommandDecodingError) -> [Int] {
        var ints: [Int] = []
        for element in try array(name) {
            guard case .int(let value) = element else { throw missing(name, "an array of integers") }
            ints.append(value)
        }
        return ints
    }
}
