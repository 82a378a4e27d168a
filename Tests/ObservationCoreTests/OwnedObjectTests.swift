import Testing

@testable import ObservationCore

/// Section 14 in the core: objects that live as long as their owner, `onRemove` patches, and
/// presence as owned objects watched by a query, each removal one revision.
@Suite("Owned objects and onRemove")
struct OwnedObjectTests {
    /// A store with class Presence, object `room` and an observer `owner` (lease 5 s) that owns
    /// `p-owner` and patches `room` when removed.
    static func world(persistent: Bool = false) throws -> (Store, String) {
        let store = persistent ? try Store(restoring: PersistedImage()) : Store()
        _ = try store.as(.admin).defineClass(
            "Presence", definition: ["properties": ["user": ["type": "string"], "room": ["type": "string"]]])
        _ = try store.as(.admin).createObject(id: "room", className: nil, values: ["last": .null, "count": 1])
        let made = try store.execute(
            Command(
                time: .now(),
                .createObserver(
                    id: "owner", tokenHash: "h-owner", name: nil, lease: 5, retainObserved: false, replay: 100,
                    onRemove: [["object": "room", "values": ["last": "owner left", "count": 0]]]), as: .admin))
        guard case .observerCreated(let observer) = made else { throw CoreError(.conflict, "no observer") }
        _ = try store.execute(
            Command(
                time: .now(),
                .createObject(
                    id: "p-owner", className: "Presence", values: ["user": "ann", "room": "r1"], generatedID: "g",
                    owner: observer.id), as: .admin))
        return (store, observer.id)
    }

    static func adminEvents(_ store: Store) throws -> [(name: String, data: JSONObject)] {
        guard case .events(let events) = try store.eventLog(of: nil).read(after: 0, limit: 10_000) else { return [] }
        return events.compactMap { event in
            guard case .object(let members)? = try? JSONParser.parse(event.data) else { return nil }
            return (event.name, members)
        }
    }

    @Test("deleting the owner deletes what it owns and applies its patches, all in the removal's revision")
    func removal() throws {
        let (store, owner) = try Self.world()
        #expect(try store.as(.admin).object("p-owner").owner == owner)
        let watcher = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).registerQuery(
            observerID: watcher, definition: ["class": "Presence", "select": ["user"]], options: ["new"])
        let revision = try store.as(.admin).deleteObserver(owner)
        #expect(throws: CoreError.self) { try store.as(.admin).object("p-owner") }
        let room = try store.as(.admin).object("room")
        #expect(room.values["last"] == "owner left" && room.values["count"] == 0 && room.revision == revision)
        let events = try Self.adminEvents(store).filter { $0.data["revision"] == .int(revision) }
        #expect(events.map(\.name) == ["observerRemoved", "objectDeleted", "valueChanged", "valueChanged"])
        let records = queryRecords(try store.eventLog(of: watcher))
        #expect(records.count == 1 && records[0].contains(#""removed":[{"index":0,"id":"p-owner"}]"#))
        #expect(records[0].contains(#""revision":\#(revision)"#))
    }

    @Test("a lease that runs out removes the owner the same way; a retained owned object goes releasePending")
    func expiryAndRetention() throws {
        let (store, owner) = try Self.world()
        let keeper = try store.as(.admin).createObserver(ObserverSettings(lease: 3600, retainObserved: true)).observer
            .id
        _ = try store.as(.admin).observe(
            observerID: keeper, objectID: "p-owner", keyPaths: ["user"], options: [], context: nil)
        let later = Timestamp(milliseconds: Timestamp.now().milliseconds + 6_000)
        guard case .expired(let gone) = try store.execute(Command(time: later, .expireLeases, as: .server)) else {
            Issue.record("no expiry")
            return
        }
        #expect(gone == [owner])
        #expect(try store.as(.admin).object("p-owner").values["user"] == "ann", "retained: still readable")
        #expect(try Self.adminEvents(store).contains { $0.name == "objectReleasePending" })
        #expect(try store.as(.admin).object("room").values["last"] == "owner left")
        _ = try store.as(.admin).deleteObserver(keeper)
        #expect(throws: CoreError.self) { try store.as(.admin).object("p-owner") }
    }

    @Test("onRemove is checked at creation: 404, 400, 403, at most 16; nothing changes")
    func badPatches() throws {
        let (store, _) = try Self.world()
        let token = try store.as(.admin).createToken(
            scopes: [["allow": ["observe", "write"], "ids": "p-*"]], secret: "s")
        let before = store.stats().revision
        let cases: [(JSON, Principal, CoreError.Code)] = [
            ([["object": "nope", "values": ["a": 1]]], .admin, .notFound),
            ([["object": "room", "values": ["bad key": 1]]], .admin, .invalidKeyPath),
            ([["object": "p-owner", "values": ["user": 3]]], .admin, .typeMismatch),
            ([["object": "room", "values": ["a": 1]]], .token(token.id), .forbidden),
            // A missing id no scope could match: 403 too, so a refusal tells nothing of what exists.
            ([["object": "zzz", "values": ["a": 1]]], .token(token.id), .forbidden),
            ([["object": "p-none", "values": ["a": 1]]], .token(token.id), .notFound),
            ([["object": "room"]], .admin, .invalidRequest),
            (.array((0...16).map { _ in ["object": "room", "values": ["a": 1]] }), .admin, .invalidRequest),
        ]
        for (onRemove, principal, code) in cases {
            do {
                _ = try store.execute(
                    Command(
                        time: .now(),
                        .createObserver(
                            id: "o", tokenHash: "h", name: nil, lease: 60, retainObserved: false, replay: 10,
                            onRemove: onRemove), as: principal))
                Issue.record("accepted \(onRemove)")
            } catch {
                #expect(error.code == code, "\(onRemove): \(error.message)")
            }
        }
        #expect(store.stats().revision == before)
        #expect(throws: CoreError.self) {
            try store.execute(
                Command(
                    time: .now(),
                    .createObject(id: "x", className: nil, values: [:], generatedID: "g", owner: "nobody"), as: .admin))
        }
    }

    @Test("a patch whose object is gone is skipped; the patches of a revoked token's observer still apply")
    func skippedAndRevoked() throws {
        let (store, _) = try Self.world()
        _ = try store.as(.admin).createObject(id: "note", className: nil, values: ["n": 1])
        let token = try store.as(.admin).createToken(
            scopes: [["allow": ["read", "observe", "write", "create"], "ids": "*"]], secret: "t")
        let made = try store.execute(
            Command(
                time: .now(),
                .createObserver(
                    id: "tab", tokenHash: "h-tab", name: nil, lease: 60, retainObserved: false, replay: 10,
                    onRemove: [["object": "note", "values": ["n": 2]], ["object": "room", "values": ["last": "tab"]]]),
                as: .token(token.id)))
        guard case .observerCreated(let tab) = made else { return }
        _ = try store.as(.admin).deleteObject("note")
        _ = try store.execute(Command(time: .now(), .revokeToken(id: token.id), as: .admin))
        _ = try store.as(.admin).deleteObserver(tab.id)
        #expect(try store.as(.admin).object("room").values["last"] == "tab")
    }

    @Test("a token names only its own observers as owners, and its owned scope reads what they own")
    func ownedScope() throws {
        let (store, adminsObserver) = try Self.world()
        let token = try store.as(.admin).createToken(
            scopes: [["allow": ["read", "observe", "create", "write"], "owned": true]], secret: "own")
        let made = try store.execute(
            Command(
                time: .now(),
                .createObserver(
                    id: "mine", tokenHash: "h-mine", name: nil, lease: 60, retainObserved: false, replay: 10),
                as: .token(token.id)))
        guard case .observerCreated(let mine) = made else { return }
        func create(_ id: String, owner: String?) -> CoreError.Code? {
            do {
                _ = try store.execute(
                    Command(
                        time: .now(),
                        .createObject(id: id, className: nil, values: [:], generatedID: "g", owner: owner),
                        as: .token(token.id)))
                return nil
            } catch { return error.code }
        }
        #expect(create("a", owner: adminsObserver) == .forbidden)
        #expect(create("b", owner: nil) == .forbidden, "owned: an object without an owner is not the token's")
        #expect(create("c", owner: mine.id) == nil)
        #expect(
            try store.as(.token(token.id)).objects(className: nil, limit: 10, after: nil).objects.map(\.id) == ["c"])
    }

    @Test("a query of an owned-only token counts its members right as they are written and deleted")
    func ownedQueryTotal() throws {
        let (store, _) = try Self.world()
        let token = try store.as(.admin).createToken(
            scopes: [["allow": ["read", "observe", "create", "write", "delete"], "owned": true]], secret: "own")
        let caller = store.as(.token(token.id))
        let mine = try caller.createObserver(ObserverSettings(lease: 60)).observer.id
        for id in ["m1", "m2"] {
            _ = try store.execute(
                Command(
                    time: .now(),
                    .createObject(
                        id: id, className: "Presence", values: ["user": .string(id), "room": "r1"], generatedID: "g",
                        owner: mine), as: .token(token.id)))
        }
        let definition: JSON = ["class": "Presence", "where": [["room", "==", "r1"]]]
        let query = try caller.registerQuery(observerID: mine, definition: definition, options: ["new"]).query.id
        func total() throws -> Int? { try caller.query(query, of: mine).total }
        #expect(try total() == 2)
        _ = try caller.setValue("ann", of: "m1", at: "user")
        #expect(try total() == 2, "a member written stays one member")
        _ = try caller.setValue("r2", of: "m2", at: "room")
        #expect(try total() == 1)
        _ = try caller.setValue("r1", of: "m2", at: "room")
        #expect(try total() == 2)
        _ = try caller.deleteObject("m1")
        #expect(try total() == 1)
        #expect(try total() == caller.answerQuery(definition).total)
    }

    @Test("owners and patches survive a restart (checkpoint, or commands)", arguments: [true, false])
    func persisted(checkpoint: Bool) throws {
        let (store, owner) = try Self.world(persistent: true)
        var directory = DataDirectory()
        directory.apply(store.takeBatch(checkpoint: checkpoint))
        let restored = try Store(restoring: directory.image)
        #expect(try restored.as(.admin).object("p-owner").owner == owner)
        _ = try restored.as(.admin).deleteObserver(owner)
        #expect(throws: CoreError.self) { try restored.as(.admin).object("p-owner") }
        #expect(try restored.as(.admin).object("room").values["last"] == "owner left")
    }
}
