import Testing

@testable import ObservationCore

/// The one authorization decision (`Authorization.decide`): who may ask what, for every kind of
/// caller, and the store's reads and commands through it.
@Suite("Authorization: one decision for commands, reads, routes and client names")
struct AuthorizationTests {
    static let access = Access(
        tokenID: "tok_a", kind: .token,
        grant: AccessGrant([try! Scope(["allow": ["read", "observe", "write"], "class": "Doc"], at: 0)]),
        client: "tab", expiresAt: nil)
    static let doc = ObjectIdentity(id: "d1", className: "Doc")
    static let other = ObjectIdentity(id: "x1", className: "Secret")

    /// (question, admin, server, token, observer of the token, nobody).
    static let table: [(AccessQuestion, [Verdict])] = [
        (.command(background: false), [.allowed, .forbidden, .allowed, .allowed, .forbidden]),
        (.command(background: true), [.forbidden, .allowed, .forbidden, .forbidden, .forbidden]),
        (.read, [.allowed, .forbidden, .allowed, .allowed, .forbidden]),
        (.object(.write, doc), [.allowed, .forbidden, .allowed, .forbidden, .forbidden]),
        (.object(.read, other), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.object(.observe, doc), [.allowed, .forbidden, .allowed, .allowed, .forbidden]),
        (.missingObject(.delete, id: "d9"), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.name(.post, "chat"), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.observer(id: "obs_t", maker: "tok_a", exists: true), [.allowed, .forbidden, .allowed, .allowed, .forbidden]),
        (.observer(id: "obs_x", maker: nil, exists: true), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.observer(id: "obs_y", maker: nil, exists: false), [.allowed, .forbidden, .notFound, .forbidden, .forbidden]),
        (.makeObserver, [.allowed, .forbidden, .allowed, .forbidden, .forbidden]),
        (.query(className: "Doc"), [.allowed, .forbidden, .allowed, .allowed, .forbidden]),
        (.query(className: nil), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.adminOnly("read tokens"), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.route(.admin), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.route(.open), [.allowed, .allowed, .allowed, .allowed, .allowed]),
        (.route(.objects(changing: true)), [.allowed, .forbidden, .allowed, .forbidden, .forbidden]),
        (.route(.classes(changing: false)), [.allowed, .forbidden, .allowed, .allowed, .forbidden]),
        (.route(.classes(changing: true)), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
        (.client("tab"), [.allowed, .forbidden, .allowed, .allowed, .forbidden]),
        (.client("other"), [.allowed, .forbidden, .forbidden, .forbidden, .forbidden]),
    ]

    @Test("each kind of caller, each question", arguments: table.indices)
    func decisions(_ row: Int) {
        let (question, expected) = Self.table[row]
        let callers: [(Principal, Access?)] = [
            (.admin, nil), (.server, nil), (.token("tok_a"), Self.access), (.observer("obs_t"), Self.access),
            (.nobody, nil),
        ]
        for ((principal, access), verdict) in zip(callers, expected) {
            #expect(
                Authorization.decide(question, by: principal, access: access) == verdict, "\(principal) \(question)")
        }
    }

    @Test("a read or a command needs a caller that may: nobody reads nothing, the admin no background change")
    func sessions() throws {
        let store = Store()
        _ = try store.as(.admin).defineClass("Doc", definition: ["properties": ["title": ["type": "string"]]])
        _ = try store.as(.admin).createObject(id: "d1", className: "Doc", values: ["title": "a"])
        #expect(throws: CoreError.self) { try store.as(.nobody).object("d1") }
        #expect(throws: CoreError.self) { try store.as(.nobody).objects(className: nil, limit: 10, after: nil) }
        #expect(throws: CoreError.self) { try store.as(.nobody).setValue("b", of: "d1", at: "title") }
        #expect(throws: CoreError.self) { try store.as(.server).setValue("b", of: "d1", at: "title") }
        #expect(throws: CoreError.self) { try store.as(.admin).issue(.expireLeases) }
        #expect(throws: CoreError.self) { try store.as(.admin).issue(.restart) }
        guard case .expired(let ids) = try store.as(.server).issue(.expireLeases) else {
            Issue.record("expireLeases answered something else")
            return
        }
        #expect(ids.isEmpty)
        #expect(try store.as(.admin).object("d1").values["title"] == "a")
        // Refusals take no revision.
        #expect(store.stats().revision == 2)
    }

    @Test("a command's caller survives its encoding: the admin and the server are told apart by action")
    func encoding() throws {
        let commands = [
            Command(time: Timestamp(milliseconds: 1), .expireLeases, as: .server),
            Command(time: Timestamp(milliseconds: 1), .deleteClass(name: "A"), as: .admin),
            Command(time: Timestamp(milliseconds: 1), .deleteClass(name: "A"), as: .token("tok_a")),
            Command(time: Timestamp(milliseconds: 1), .deleteClass(name: "A"), as: .nobody),
        ]
        for command in commands { #expect(try Command(decoding: command.encoded()) == command) }
    }
}
