import ObservationCore

/// A seeded source of commands of every kind, valid and invalid, shaped to reach the hard
/// parts: key paths through references and arrays, computed values and their dependents,
/// to-many mutations, retained objects released several at once, coalescing postings, leases
/// that run out, clocks that go backwards. The same seed gives the same commands.
struct CommandGenerator {
    private var random: SeededGenerator
    private var time: Int64 = 1_800_000_000_000
    private var serial = 0
    /// Counts the keepalive slot's draws (every fourth is an acknowledgement).
    private var slot = 0
    /// Observers made so far; every sixteenth (from the third) delivers to a URL (section 16).
    private var made = 0
    /// The observers made with `deliver` (section 16), in creation order.
    private var delivering: [String] = []
    private(set) var people: [String] = []
    private(set) var teams: [String] = []
    private(set) var plain: [String] = []
    private(set) var observers: [String] = []
    private(set) var registrations: [String] = []
    private(set) var subscriptions: [String] = []
    private(set) var queries: [String] = []
    private(set) var tokens: [String] = []
    /// The opening is the admin's; commands after it are sometimes a token's.
    private var opened = false

    init(seed: UInt64) { random = SeededGenerator(seed: seed) }

    /// `count` commands after a fixed opening (the classes and a first population).
    mutating func commands(_ count: Int) -> [Command] {
        var commands = opening()
        opened = true
        while commands.count < count { commands.append(next()) }
        return commands
    }

    private mutating func opening() -> [Command] {
        var commands = [
            stamp(
                .defineClass(
                    name: "Person",
                    definition: [
                        "properties": [
                            "name": ["type": "string"], "age": ["type": "integer", "notify": "onChange"],
                            "nick": ["type": "string", "notify": "manual"], "boss": ["type": "ref", "class": "Person"],
                            "friends": ["type": "array", "items": ["type": "ref", "class": "Person"]],
                            "fullName": [
                                "type": "string", "computed": "{name} ({age})", "dependsOn": ["name", "age"],
                            ],
                            "bossName": ["type": "string", "computed": "boss.name"],
                        ]
                    ])),
            stamp(
                .defineClass(
                    name: "Team",
                    definition: [
                        "properties": [
                            "title": ["type": "string"], "members": ["type": "array"],
                            "lead": ["type": "ref", "class": "Person"],
                            "total": ["type": "number", "computed": "members.@sum.age"],
                            "leadName": ["type": "string", "computed": "lead.name"],
                        ]
                    ])),
        ]
        for index in 0..<12 {
            people.append("p\(index)")
            commands.append(
                stamp(
                    .createObject(
                        id: "p\(index)", className: "Person",
                        values: ["name": .string("N\(index)"), "age": .int(20 + index), "friends": []],
                        generatedID: "obj_gen")))
        }
        for index in 0..<4 {
            teams.append("t\(index)")
            commands.append(
                stamp(
                    .createObject(
                        id: "t\(index)", className: "Team",
                        values: [
                            "title": .string("T\(index)"), "members": .array(people.prefix(3).map(JSON.reference)),
                        ],
                        generatedID: "obj_gen")))
        }
        for index in 0..<4 {
            plain.append("x\(index)")
            commands.append(
                stamp(
                    .createObject(
                        id: "x\(index)", className: nil,
                        values: ["nested": ["a": ["b": .int(index)]], "list": [1, 2]],
                        generatedID: "obj_gen")))
        }
        return commands
    }

    private mutating func next() -> Command {
        switch pick(0..<112) {
        case 0..<22: return stamp(setValue())
        case 22..<28:
            let values: JSONObject = ["name": .string(word()), "age": .int(pick(0..<90))]
            return stamp(
                .patch(object: chance(0.9) ? person() : anyObject(), values: values, ifRevision: chance(0.1) ? 5 : nil))
        case 28..<35: return stamp(mutation())
        case 35..<37: return stamp(.notify(object: person(), keyPaths: chance(0.8) ? ["nick"] : ["nick", "nmae"]))
        case 37..<41: return stamp(createObject())
        case 41..<43: return stamp(deleteObject())
        case 43..<44: return stamp(.nodeDown(holder: chance(0.5) ? "n1#1" : "n2#1"))
        case 44..<48: return stamp(createObserver())
        case 48..<50:
            let doomed = observer()
            if chance(0.8) { observers.removeAll { $0 == doomed } }
            return stamp(.deleteObserver(observer: doomed))
        case 50..<52:
            // Every fourth keepalive's draws make section 16's acknowledgement instead (of a delivering
            // observer, or refused: no such event): the same draws, so the other kinds' sequence stays.
            let keepalive = stamp(.keepalive(observer: observer()))
            slot += 1
            guard slot % 4 == 0, !delivering.isEmpty else { return keepalive }
            let target = delivering[slot / 4 % delivering.count]
            return Command(time: keepalive.time, .acknowledge(observer: target, through: slot / 4 % 2), as: .server)
        case 52..<62: return stamp(observe())
        case 62..<66: return stamp(unobserve())
        case 66..<69: return stamp(subscribe())
        case 69..<70:
            return stamp(
                .unsubscribe(
                    observer: observer(), subscription: maybe(element(subscriptions)), name: maybe("Ping"), object: nil)
            )
        case 70..<78: return stamp(post())
        case 78..<81: return stamp(.deliverQueued(posting: chance(0.9) ? (chance(0.5) ? "asap" : "idle") : "now"))
        case 81..<84: return stamp(.expireLeases)
        case 84..<88: return stamp(.openStream(observer: chance(0.9) ? observer() : nil, holder: holder()))
        case 88..<92: return stamp(.closeStream(observer: chance(0.9) ? observer() : nil, holder: holder()))
        case 92..<94: return stamp(redefineClass())
        case 94..<95: return stamp(.deleteClass(name: chance(0.5) ? "Team" : "Nothing"))
        case 95..<96: return stamp(.restart)
        case 96..<98: return stamp(.flushThrottled)
        case 98..<100: return stamp(transaction())
        case 100..<104: return stamp(query())
        case 104..<106:
            return stamp(.unquery(observer: observer(), query: element(queries) ?? "qry_none"))
        case 106..<108: return stamp(createToken())
        case 108..<109:
            return stamp(
                .changeToken(
                    id: element(tokens) ?? "tok_none", scopes: chance(0.5) ? Self.scopes(pick(0..<3)) : nil,
                    ttl: chance(0.5) ? .int(pick(1..<30)) : (chance(0.3) ? .null : nil)))
        case 109..<110:
            return stamp(.revokeToken(id: chance(0.8) ? element(tokens) ?? "tok_none" : "jti\(pick(0..<3))"))
        case 110..<112: return stamp(.expireTokens)
        default:
            return stamp(
                .setValue(object: plainObject(), keyPath: "nested.a.b", value: .int(pick(0..<5)), ifRevision: nil))
        }
    }

    // MARK: - Kinds

    private mutating func setValue() -> Command.Action {
        let value: JSON
        let keyPath: String
        switch pick(0..<8) {
        case 0: (keyPath, value) = ("name", .string(word()))
        case 1: (keyPath, value) = ("age", .int(pick(0..<4)))  // often unchanged: onChange skips
        case 2: (keyPath, value) = ("boss", .reference(person()))
        case 3: (keyPath, value) = ("boss.name", .string(word()))  // through a reference (may dangle)
        case 4: (keyPath, value) = ("friends", .array((0..<pick(0..<4)).map { _ in JSON.reference(person()) }))
        case 5: (keyPath, value) = ("nick", .string(word()))
        case 6: (keyPath, value) = chance(0.3) ? ("age", .string("not a number")) : ("age", .int(pick(0..<90)))
        default: (keyPath, value) = chance(0.3) ? ("fullName", "computed") : ("name", .string(word()))
        }
        return .setValue(
            object: chance(0.95) ? person() : anyObject(), keyPath: keyPath, value: value,
            ifRevision: chance(0.03) ? 7 : nil)
    }

    private mutating func mutation() -> Command.Action {
        let kinds = ["insertion", "insertion", "removal", "replacement"]
        let kind = chance(0.05) ? "shuffle" : (element(kinds) ?? "insertion")
        let indexes = chance(0.95) ? [pick(0..<2)] : [2, 1]
        let values: [JSON] = kind == "removal" ? [] : indexes.map { _ in JSON.reference(person()) }
        let (object, keyPath) = chance(0.5) ? (team(), "members") : (person(), "friends")
        return .mutate(object: object, keyPath: keyPath, kind: kind, indexes: indexes, values: values, ifRevision: nil)
    }

    private mutating func deleteObject() -> Command.Action {
        let doomed = chance(0.9) ? (chance(0.8) ? person() : anyObject()) : "ghost"
        if chance(0.8) {  // mostly forgotten; sometimes still used afterwards (404s)
            people.removeAll { $0 == doomed }
            plain.removeAll { $0 == doomed }
        }
        return .deleteObject(object: doomed)
    }

    private mutating func createObject() -> Command.Action {
        serial += 1
        if chance(0.3) {
            plain.append("obj_\(serial)")
            return .createObject(
                id: nil, className: nil, values: ["v": .int(serial), "nested": ["a": ["b": 0]]],
                generatedID: "obj_\(serial)")
        }
        let conflict = chance(0.05)
        let id = conflict ? (element(people) ?? "p0") : "q\(serial)"
        var values: JSONObject = ["name": .string(word()), "friends": []]
        if chance(0.5) { values["boss"] = .reference(person()) }
        if !conflict { people.append(id) }
        // Some live as long as an observer (section 14): deleted when it is removed or expires.
        return .createObject(
            id: id, className: "Person", values: values, generatedID: "obj_unused",
            owner: chance(0.1) ? observer() : nil)
    }

    /// Scopes of three shapes: some people by id, every person, and objects by id alone.
    static func scopes(_ kind: Int) -> JSON {
        switch kind {
        case 0: [["allow": ["read", "observe", "write", "create"], "class": "Person", "ids": "p1*"]]
        case 1:
            [
                ["allow": ["read", "observe", "write", "create", "delete", "subscribe"], "class": "Person"],
                ["allow": ["post"], "names": "Pi*"],
            ]
        default: [["allow": ["read", "observe", "delete"], "ids": "*0"]]
        }
    }

    private mutating func createToken() -> Command.Action {
        serial += 1
        let id = "tok_\(serial)"
        tokens.append(id)
        return .createToken(
            id: id, secretHash: "secret\(serial)", name: nil,
            scopes: chance(0.05) ? [["allow": ["read"]]] : Self.scopes(pick(0..<3)),
            ttl: chance(0.5) ? pick(1..<20) : nil, client: chance(0.3) ? "tab1" : nil)
    }

    /// Who makes a command: the server a background change; a client's mostly the admin, else a
    /// token, a JWT or an observer's token.
    private mutating func principal(_ action: Command.Action) -> Principal {
        if action.isBackground { return .server }
        guard opened else { return .admin }
        switch pick(0..<30) {
        case 0: return .token(element(tokens) ?? "tok_none")
        case 1:
            let grant = try! AccessGrant(parsing: Self.scopes(pick(0..<3)))
            return .jwt(
                Access(
                    tokenID: "jti\(pick(0..<3))", kind: .jwt, grant: grant, client: nil,
                    expiresAt: Timestamp(milliseconds: time + Int64(pick(-2000..<20_000)))))
        case 2: return .observer(observer())
        default: return .admin
        }
    }

    private mutating func createObserver() -> Command.Action {
        serial += 1
        let id = "obs_\(serial)"
        observers.append(id)
        made += 1
        let delivers = made % 16 == 3
        if delivers { delivering.append(id) }
        // The same draws whether or not it delivers (the other kinds' sequence stays); a delivering one is valid.
        let name: String? = chance(0.1) ? "bad name" : nil
        let lease = chance(0.15) ? pick(1..<4) : pick(600..<3600)
        let retain = chance(0.4)
        let replay = chance(0.1) ? 0 : pick(1..<50)
        let client: String? = chance(0.5) ? "tab0" : nil
        let onRemove: JSON? = chance(0.15) ? [["object": .string(person()), "values": ["nick": .string(word())]]] : nil
        return .createObserver(
            id: id, tokenHash: "hash\(serial)", name: delivers ? nil : name, lease: lease, retainObserved: retain,
            replay: delivers ? max(replay, 8) : replay, client: client, onRemove: delivers ? nil : onRemove,
            deliver: delivers
                ? ["url": "http://127.0.0.1:9/h", "secret": "whsec_x", "maxBatch": .int(1 + serial % 3)] : nil)
    }

    private mutating func observe() -> Command.Action {
        let object: String
        let paths: [String]
        switch pick(0..<10) {
        case 0: (object, paths) = (plainObject(), ["nested.a.b", "nested", "list", "list.@count"])
        case 1..<4:
            (object, paths) = (
                team(),
                ["title", "members", "members.@count", "members.@sum.age", "total", "leadName", "lead.friends.name"]
            )
        default:
            (object, paths) = (
                person(),
                [
                    "name", "age", "fullName", "bossName", "boss.name", "boss.boss.age", "friends.name",
                    "friends.@count", "friends.@avg.age", "nick", "friends",
                ]
            )
        }
        var chosen = (0..<pick(1..<4)).compactMap { _ in element(paths) }
        if chance(0.05) { chosen.append("nmae") }  // a typo: the whole request is refused
        let ids = chosen.map { _ -> String in
            serial += 1
            return "reg_\(serial)"
        }
        registrations += ids
        let options =
            (chance(0.03)
                ? ["new", "bogus"]
                : ["new", "old", "initial", "prior"].filter { _ in chance(0.6) } + (chance(0.15) ? ["skipOwn"] : []))
        return .observe(
            observer: observer(), object: object, keyPaths: chosen, options: options,
            context: chance(0.3) ? ["tag": .int(serial)] : (chance(0.1) ? .null : nil), registrationIDs: ids,
            throttle: chance(0.15) ? pick(1..<600) : nil)
    }

    private mutating func unobserve() -> Command.Action {
        switch pick(0..<6) {
        case 0: return .unobserve(observer: observer(), registration: element(registrations), object: nil, keyPath: nil)
        case 1: return .unobserve(observer: observer(), registration: nil, object: person(), keyPath: nil)
        case 2: return .unobserve(observer: observer(), registration: nil, object: person(), keyPath: "name")
        default: return .unobserve(observer: observer(), registration: nil, object: nil, keyPath: nil)  // unobserveAll
        }
    }

    /// Queries of every index entry (equality, range, prefix, none), through references, on
    /// computed keys, without a class; some refused (a typo, no such class, `prior`).
    private mutating func query() -> Command.Action {
        serial += 1
        queries.append("qry_\(serial)")
        let definitions: [JSON] = [
            [
                "class": "Person", "where": [["age", ">=", .int(pick(0..<90))]], "orderBy": [["name", "asc"]],
                "limit": 3, "select": ["name", "age"],
            ],
            [
                "class": "Person", "where": [["name", "==", .string(word())]], "orderBy": [["age", "desc"]], "limit": 5,
            ],
            [
                "class": "Person", "where": [["boss.name", "in", [.string(word()), .string(word())]]],
                "orderBy": [["fullName", "asc"], ["age", "desc"]], "limit": 4,
                "select": ["boss.name", "friends.@count"],
            ],
            [
                "class": "Person", "where": [["name", "prefix", "A"], ["age", "<", 60]], "limit": 2, "select": ["nick"],
            ],
            [
                "where": [["v", "exists", true]], "orderBy": [["v", "desc"]], "limit": 3,
                "select": ["v", "nested.a.b"],
            ],
            ["class": "Person", "where": [["nmae", "==", 1]]],
            ["class": "Nothing"],
        ]
        let options = (chance(0.05) ? ["prior"] : ["initial", "new", "old"].filter { _ in chance(0.6) })
        return .query(
            observer: observer(), definition: element(definitions) ?? [:], options: options,
            context: chance(0.3) ? ["q": .int(serial)] : nil, throttle: chance(0.15) ? pick(1..<600) : nil,
            queryID: "qry_\(serial)")
    }

    private mutating func subscribe() -> Command.Action {
        serial += 1
        subscriptions.append("sub_\(serial)")
        return .subscribe(
            observer: observer(), name: chance(0.7) ? element(["Ping", "Pong", "Bad\u{7}"]) : nil,
            object: chance(0.4) ? person() : nil, subscriptionID: "sub_\(serial)")
    }

    private mutating func post() -> Command.Action {
        let posting = element(["now", "now", "asap", "idle", "later"]) ?? "now"
        let coalesce: [String] =
            posting == "now"
            ? [] : ([["name"], ["object"], ["name", "object"], [], ["nmae"]].randomElement(using: &random) ?? [])
        return .post(
            name: element(["Ping", "Pong"]) ?? "Ping", object: chance(0.5) ? person() : nil,
            userInfo: chance(0.5) ? ["n": .int(pick(0..<9))] : nil, posting: posting, coalesce: coalesce)
    }

    /// Several writes as one (section 15), as an app makes them: mostly valid, with an `expect`
    /// that sometimes fails and, now and then, one operation that is refused after others were staged.
    private mutating func transaction() -> Command.Action {
        var operations: [Command.Action] = []
        for _ in 0..<pick(1..<5) {
            switch pick(0..<8) {
            case 0, 1:
                operations.append(
                    .setValue(object: plainObject(), keyPath: "nested.a.b", value: .int(pick(0..<5)), ifRevision: nil))
            case 2: operations.append(.patch(object: person(), values: ["name": .string(word())], ifRevision: nil))
            case 3: operations.append(mutation())
            case 4: operations.append(createObject())
            case 5: operations.append(chance(0.8) ? post() : .notify(object: person(), keyPaths: ["nick"]))
            case 6:
                operations.append(
                    .setValue(object: person(), keyPath: "age", value: .int(pick(0..<3)), ifRevision: nil))
            default: operations.append(chance(0.5) ? deleteObject() : setValue())
            }
        }
        var expect: [Transaction.Expectation] = []
        switch pick(0..<8) {
        case 0: expect.append(Transaction.Expectation(object: plainObject(), .exists(chance(0.9))))
        case 1: expect.append(Transaction.Expectation(object: person(), .matches([["age", ">=", .int(pick(0..<25))]])))
        case 2: expect.append(Transaction.Expectation(object: person(), .ifRevision(pick(0..<40))))
        default: break
        }
        serial += 1
        return .transaction(
            Transaction(id: chance(0.5) ? "tx\(serial)" : nil, expect: expect, operations: operations))
    }

    private mutating func redefineClass() -> Command.Action {
        // Sometimes compatible, sometimes refused: existing values break it, or a cycle.
        chance(0.5)
            ? .defineClass(
                name: "Extra\(pick(0..<3))",
                definition: ["properties": ["a": ["type": "number"], "b": ["type": "number", "computed": "a"]]])
            : .defineClass(name: "Person", definition: ["properties": ["name": ["type": "number"]]])
    }

    // MARK: - Picking

    private mutating func stamp(_ action: Command.Action) -> Command {
        time += Int64(pick(0..<300))
        if chance(0.02) { time -= 5_000 }  // a clock that goes back: apply must not
        // Some writers name themselves (`by`, section 7.3); observers of tab0 skip its echoes.
        // Some retry under an idempotency key: a replay, or a key reused for another request.
        let claim =
            chance(0.08)
            ? IdempotencyClaim(
                key: "key\(pick(0..<6))", fingerprint: "request\(pick(0..<2))",
                answerMembers: chance(0.2) ? ["token": "t"] : [:]) : nil
        return Command(
            time: Timestamp(milliseconds: time), action, as: principal(action),
            by: chance(0.4) ? element(["tab0", "tab1"]) : nil,
            idempotency: claim)
    }

    private mutating func pick(_ range: Range<Int>) -> Int { Int.random(in: range, using: &random) }
    private mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &random) < probability
    }
    private mutating func maybe<T>(_ value: T?) -> T? { chance(0.5) ? value : nil }
    private mutating func element<T>(_ list: [T]) -> T? { list.randomElement(using: &random) }
    private mutating func word() -> String { element(["Ada", "Alan", "Grace", "Edsger", "Barbara"]) ?? "Ada" }
    private mutating func person() -> String { chance(0.97) ? (element(people) ?? "p0") : "ghost" }
    private mutating func team() -> String { element(teams) ?? "t0" }
    private mutating func plainObject() -> String { element(plain) ?? "x0" }
    private mutating func anyObject() -> String { element(people + plain) ?? "p0" }
    private mutating func observer() -> String { chance(0.95) ? (element(observers) ?? "obs_none") : "obs_none" }
    /// A single server's stream (nil) or one of two cluster nodes'.
    private mutating func holder() -> String? { chance(0.5) ? nil : (chance(0.5) ? "n1#1" : "n2#1") }
}
