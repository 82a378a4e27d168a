import Testing

@testable import ObservationCore

/// Section 13 in the core: scopes parsed and matched, every command decided with its
/// principal as it is applied, reads through references filtered, tokens that end.
@Suite("Scoped access: scopes, decisions, filtered reads, revocation and expiry")
struct AccessTests {
    @Test("globs: * matches any run of characters, everything else itself")
    func globs() throws {
        let cases: [(String, String, Bool)] = [
            ("room1-*", "room1-a", true), ("room1-*", "room1-", true), ("room1-*", "room2-a", false),
            ("*", "", true), ("*-x", "a-x", true), ("*-x", "a-xy", false), ("a*b*c", "abcbc", true),
            ("a*bc*c", "abc", false), ("exact", "exact", true), ("exact", "exactly", false), ("**", "z", true),
            ("chat.*.in", "chat.room1.in", true), ("chat.*.in", "chat.room1.out", false),
        ]
        for (pattern, text, expected) in cases {
            let glob = try #require(Glob(pattern, maxLength: 256) { _ in true })
            #expect(glob.matches(text) == expected, "\(pattern) ~ \(text)")
        }
    }

    @Test("bad scopes are refused with invalidRequest and make no token")
    func badScopes() throws {
        let store = Store()
        let bad: [JSON] = [
            [["allow": ["read"]]], [["allow": ["read"], "names": "x.*"]], [["allow": [], "class": "A"]],
            [["allow": ["fly"], "class": "A"]], [["allow": ["read"], "class": "A", "colour": 1]],
            [["allow": ["read"], "ids": ""]], [["allow": ["read"], "ids": "a/b"]], [["allow": ["read"], "owned": 1]],
            [], "read", [["allow": "read", "class": "A"]],
        ]
        let before = store.stats().revision
        for scopes in bad {
            #expect(throws: CoreError.self) { try store.as(.admin).createToken(scopes: scopes, secret: "s") }
            do {
                _ = try store.as(.admin).createToken(scopes: scopes, secret: "s")
            } catch {
                #expect(error.code == .invalidRequest, "\(scopes): \(error.message)")
            }
        }
        for ttl in [0, -1, 31_536_001] {
            #expect(throws: CoreError.self) {
                try store.as(.admin).createToken(scopes: [["allow": ["read"], "class": "A"]], ttl: ttl, secret: "s")
            }
        }
        #expect(store.stats().revision == before)
        #expect(try store.as(.admin).tokens().isEmpty)
    }

    @Test("writes, creates and deletes outside the scopes are 403 and take no revision")
    func decisions() throws {
        let (store, token) = try Self.world()
        func run(_ action: Command.Action) -> CoreError.Code? {
            do {
                _ = try store.execute(Command(time: .now(), action, as: .token(token)))
                return nil
            } catch { return error.code }
        }
        _ = try store.as(.admin).createObject(id: "room1-c", className: "Doc", values: ["ref": .reference("room2-a")])
        let before = store.stats().revision
        #expect(run(.setValue(object: "room2-a", keyPath: "title", value: "x", ifRevision: nil)) == .forbidden)
        #expect(run(.setValue(object: "room1-o", keyPath: "title", value: "x", ifRevision: nil)) == .forbidden)
        // Through a reference into an object the token may not write.
        #expect(run(.setValue(object: "room1-c", keyPath: "ref.title", value: "x", ifRevision: nil)) == .forbidden)
        #expect(run(.deleteObject(object: "room1-a")) == .forbidden)  // no delete in its scopes
        #expect(run(.createObject(id: "room2-z", className: "Doc", values: [:], generatedID: "g")) == .forbidden)
        #expect(run(.createObject(id: nil, className: "Doc", values: [:], generatedID: "obj_1")) == .forbidden)
        #expect(run(.defineClass(name: "X", definition: ["properties": [:]])) == .forbidden)
        #expect(
            run(.post(name: "chat.room2.x", object: nil, userInfo: nil, posting: "now", coalesce: [])) == .forbidden)
        #expect(run(.createToken(id: "t", secretHash: "h", name: nil, scopes: [], ttl: nil, client: nil)) == .forbidden)
        #expect(run(.expireLeases) == .forbidden)
        #expect(store.stats().revision == before, "refusals take no revision")
        #expect(run(.setValue(object: "room1-a", keyPath: "title", value: "ok", ifRevision: nil)) == nil)
        #expect(run(.createObject(id: "room1-new", className: "Doc", values: [:], generatedID: "g")) == nil)
        #expect(run(.post(name: "chat.room1.x", object: nil, userInfo: nil, posting: "now", coalesce: [])) == nil)
        // Its observers are its own; another token's (or the admin's) are not.
        let theirs = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        #expect(run(.keepalive(observer: theirs)) == .forbidden)
        #expect(
            run(.createObserver(id: "o1", tokenHash: "h1", name: nil, lease: 60, retainObserved: false, replay: 10))
                == nil)
        #expect(run(.keepalive(observer: "o1")) == nil)
        #expect(
            run(
                .observe(
                    observer: "o1", object: "room2-a", keyPaths: ["title"], options: [], context: nil,
                    registrationIDs: ["r"])) == .forbidden)
        #expect(
            run(
                .query(
                    observer: "o1", definition: ["class": "Other"], options: [], context: nil, throttle: nil,
                    queryID: "q")) == .forbidden)
        #expect(run(.subscribe(observer: "o1", name: nil, object: nil, subscriptionID: "s")) == .forbidden)
        #expect(run(.subscribe(observer: "o1", name: "chat.room1.x", object: nil, subscriptionID: "s")) == nil)
    }

    @Test("a scoped observer reads an unreadable object along a reference as null, as the reference moves")
    func nullAlongReferences() throws {
        let (store, token) = try Self.world()
        let observer = try Self.observer(of: token, in: store)
        _ = try store.execute(
            Command(
                time: .now(),
                .observe(
                    observer: observer, object: "room1-b", keyPaths: ["ref.title"], options: ["new", "initial"],
                    context: nil, registrationIDs: ["r1"]), as: .token(token)))
        _ = try store.as(.admin).setValue(.reference("room2-a"), of: "room1-b", at: "ref")  // the admin repoints it
        _ = try store.as(.admin).setValue("B2", of: "room2-a", at: "title")  // unreadable: no record
        _ = try store.as(.admin).setValue(.reference("room1-a"), of: "room1-b", at: "ref")
        let news = changeRecords(try store.eventLog(of: observer)).map { $0["new"] }
        #expect(news == [.string("A"), .null, .string("A")], "\(news)")
        // The same key path read by the admin, and by the token.
        let reader = store.as(.token(token))
        _ = try store.as(.admin).setValue(.reference("room2-a"), of: "room1-b", at: "ref")
        #expect(try store.as(.admin).value(of: "room1-b", at: "ref.title").value == "B2")
        #expect(try reader.value(of: "room1-b", at: "ref.title").value == .null)
        #expect(try reader.object("room1-b").values["ref"] == .null)
        #expect(throws: CoreError.self) { try reader.object("room2-a") }
        let page = try reader.objects(className: nil, limit: 1, after: nil)
        #expect(page.objects.map(\.id) == ["room1-a"] && page.next == "room1-a")
        let rest = try reader.objects(className: nil, limit: 10, after: page.next)
        #expect(rest.objects.map(\.id) == ["room1-b"] && rest.next == nil, "room1-o and room2-* are not there")
    }

    @Test("observers of one key path that read differently get their own records, not one shared")
    func recordsPerReader() throws {
        let (store, token) = try Self.world()
        let admin = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).observe(
            observerID: admin, objectID: "room1-b", keyPaths: ["ref.title"], options: [.new], context: nil)
        let scoped = try Self.observer(of: token, in: store)
        _ = try store.execute(
            Command(
                time: .now(),
                .observe(
                    observer: scoped, object: "room1-b", keyPaths: ["ref.title"], options: ["new"], context: nil,
                    registrationIDs: ["r1"]), as: .token(token)))
        _ = try store.as(.admin).setValue(.reference("room2-a"), of: "room1-b", at: "ref")
        #expect(changeRecords(try store.eventLog(of: admin)).map { $0["new"] } == [.string("B")])
        let seen = changeRecords(try store.eventLog(of: scoped)).map { $0["new"] }
        #expect(seen == [.null], "room2-a is not its to read: \(seen)")
    }

    @Test("a revoked or expired token is refused with its reason; a JWT's id can be revoked unseen")
    func ending() throws {
        let (store, token) = try Self.world()
        let short = try store.as(.admin).createToken(
            scopes: [["allow": ["read", "observe"], "class": "Doc"]], ttl: 5, secret: "sh")
        let write = Command.Action.setValue(object: "room1-a", keyPath: "title", value: "x", ifRevision: nil)
        let later = Timestamp(milliseconds: Timestamp.now().milliseconds + 6_000)
        #expect(throws: CoreError(.unauthorized, "the token was expired", details: ["reason": "expired"])) {
            try store.execute(Command(time: later, .keepalive(observer: "none"), as: .token(short.id)))
        }
        var ended: [(id: String, reason: String)] = []
        _ = try store.execute(Command(time: later, .expireTokens, as: .server)) { effects in
            ended += effects.endedTokens
        }
        #expect(ended.map(\.id) == [short.id] && ended.map(\.reason) == ["expired"])
        _ = try store.execute(Command(time: .now(), .revokeToken(id: token), as: .admin))
        #expect(throws: CoreError(.unauthorized, "the token was revoked", details: ["reason": "revoked"])) {
            try store.execute(Command(time: .now(), write, as: .token(token)))
        }
        let jwt = Access(
            tokenID: "jti-1", kind: .jwt, grant: try AccessGrant(parsing: Self.scopes), client: nil,
            expiresAt: Timestamp(milliseconds: Timestamp.now().milliseconds + 60_000))
        _ = try store.execute(Command(time: .now(), write, as: .jwt(jwt)))
        _ = try store.execute(Command(time: .now(), .revokeToken(id: "jti-1"), as: .admin))
        #expect(throws: CoreError.self) { try store.execute(Command(time: .now(), write, as: .jwt(jwt))) }
        #expect(store.endReason(ofToken: "jti-1") == "revoked")
        let admin = try store.eventLog(of: nil).read(after: 0, limit: 1000)
        guard case .events(let events) = admin else { return }
        #expect(events.filter { $0.name == "tokenRevoked" }.count == 3)
    }

    @Test("new scopes: the token's observers read with them, a query moves with one record")
    func changedScopes() throws {
        let (store, token) = try Self.world()
        let observer = try Self.observer(of: token, in: store)
        _ = try store.execute(
            Command(
                time: .now(),
                .query(
                    observer: observer, definition: ["class": "Doc", "select": ["title"]], options: ["new"],
                    context: nil, throttle: nil, queryID: "q1"), as: .token(token)))
        #expect(try store.as(.admin).query("q1", of: observer).ids == ["room1-a", "room1-b"])
        var scopes = Self.scopes
        if case .array(var items) = scopes {
            items[0] = ["allow": ["read", "observe"], "class": "Doc"]
            scopes = .array(items)
        }
        _ = try store.execute(Command(time: .now(), .changeToken(id: token, scopes: scopes, ttl: nil), as: .admin))
        #expect(try store.as(.admin).query("q1", of: observer).ids == ["room1-a", "room1-b", "room2-a"])
        let records = queryRecords(try store.eventLog(of: observer))
        #expect(records.count == 1 && records[0].contains(#""id":"room2-a""#), "\(records)")
    }

    @Test(
        "tokens, ended ones and observers' access survive a restart (checkpoint, or commands)",
        arguments: [true, false])
    func persisted(checkpoint: Bool) throws {
        let (store, token) = try Self.world(persistent: true)
        let observer = try Self.observer(of: token, in: store)
        let gone = try store.as(.admin).createToken(scopes: Self.scopes, secret: "gone")
        _ = try store.execute(Command(time: .now(), .revokeToken(id: gone.id), as: .admin))
        var directory = DataDirectory()
        directory.apply(store.takeBatch(checkpoint: checkpoint))
        let restored = try Store(restoring: directory.image)
        #expect(try restored.as(.admin).tokens().map(\.id) == [token])
        #expect(restored.endReason(ofToken: gone.id) == "revoked")
        guard case .observer(_, let access?) = restored.lookUpCredential(secretHash: "h-obs", at: .now()) else {
            Issue.record("the observer's access is not restored")
            return
        }
        #expect(try access.tokenID == token && restored.as(.token(token)).observers().map(\.id) == [observer])
        guard case .token(let live, _) = restored.lookUpCredential(secretHash: TokenHash.of("scoped"), at: .now())
        else {
            Issue.record("the token's secret is not restored")
            return
        }
        let scopes = try AccessGrant(parsing: Self.scopes)
        #expect(live.grant == scopes)
    }

    // MARK: - Support

    static let scopes: JSON = [
        ["allow": ["read", "observe", "write", "create"], "class": "Doc", "ids": "room1-*"],
        ["allow": ["post", "subscribe"], "names": "chat.room1.*"],
    ]

    /// Classes `Doc` and `Other`; `room1-a`, `room1-b` (→ room1-a), `room2-a`, `room1-o`; a token.
    static func world(persistent: Bool = false) throws -> (Store, String) {
        let store = persistent ? try Store(restoring: PersistedImage()) : Store()
        let properties: JSON = ["properties": ["title": ["type": "string"], "ref": ["type": "ref"]]]
        _ = try store.as(.admin).defineClass("Doc", definition: properties)
        _ = try store.as(.admin).defineClass("Other", definition: properties)
        _ = try store.as(.admin).createObject(id: "room1-a", className: "Doc", values: ["title": "A"])
        _ = try store.as(.admin).createObject(id: "room2-a", className: "Doc", values: ["title": "B"])
        _ = try store.as(.admin).createObject(id: "room1-b", className: "Doc", values: ["ref": .reference("room1-a")])
        _ = try store.as(.admin).createObject(id: "room1-o", className: "Other", values: ["title": "O"])
        let token = try store.as(.admin).createToken(scopes: scopes, secret: "scoped")
        return (store, token.id)
    }

    static func observer(of token: String, in store: Store) throws -> String {
        let made = try store.execute(
            Command(
                time: .now(),
                .createObserver(
                    id: "obs_t", tokenHash: "h-obs", name: nil, lease: 600, retainObserved: false, replay: 1000),
                as: .token(token)))
        guard case .observerCreated(let snapshot) = made else { throw CoreError(.conflict, "no observer") }
        return snapshot.id
    }
}

/// The `change` records in a log, parsed.
func changeRecords(_ log: EventLog) -> [JSONObject] {
    guard case .events(let events) = log.read(after: 0, limit: 100_000) else { return [] }
    return events.filter { $0.name == "change" }.compactMap { event in
        guard case .object(let members)? = try? JSONParser.parse(event.data) else { return nil }
        return members
    }
}
