import Testing

@testable import ObservationCore

/// Section 15 in the core: several writes as one command, staged on the graph and undone on a
/// refusal, their effects made as one change under one revision.
@Suite("Transactions: all or nothing, one revision, one record per registration")
struct TransactionTests {
    static func set(_ object: String, _ keyPath: String, _ value: JSON, ifRevision: Int? = nil) -> Command.Action {
        .setValue(object: object, keyPath: keyPath, value: value, ifRevision: ifRevision)
    }

    /// Accounts `a0`…`a{n-1}` with balance 100, class Account (balance: integer), and `order` with `items: []`.
    static func world(accounts: Int = 3) throws -> Store {
        let store = Store()
        let admin = store.as(.admin)
        _ = try admin.defineClass(
            "Account", definition: ["properties": ["balance": ["type": "integer"], "note": ["type": "string"]]])
        for index in 0..<accounts {
            _ = try admin.createObject(id: "a\(index)", className: "Account", values: ["balance": 100])
        }
        _ = try admin.createObject(id: "order", className: nil, values: ["items": [], "state": "open"])
        return store
    }

    /// Every object's JSON, the revision and the admin stream's length: what a refusal must not change.
    static func fingerprint(_ store: Store) throws -> String {
        let page = try store.as(.admin).objects(className: nil, limit: 1000, after: nil)
        let objects = page.objects.map { JSON.object($0.json).description }.joined(separator: "\n")
        let admin = try OwnedObjectTests.adminEvents(store).count
        return "\(objects)\nrevision \(store.stats().revision)\nadmin \(admin)"
    }

    static func run(
        _ store: Store, _ operations: [Command.Action], id: String? = nil, expect: [Transaction.Expectation] = []
    )
        throws(CoreError) -> TransactionResult
    {
        try store.as(.admin).transaction(Transaction(id: id, expect: expect, operations: operations))
    }

    @Test("every kind of operation, each seeing the ones before it, under one revision")
    func everyKind() throws {
        let store = try Self.world()
        let watcher = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).subscribe(observerID: watcher, name: "Placed", object: nil)
        let before = store.stats().revision
        let result = try Self.run(
            store,
            [
                Self.set("a0", "balance", 90),
                .patch(object: "a1", values: ["balance": 110, "note": "from a0"], ifRevision: nil),
                .createObject(id: "o2", className: nil, values: ["items": []], generatedID: "g"),
                .mutate(
                    object: "o2", keyPath: "items", kind: "insertion", indexes: [0], values: ["sku"], ifRevision: nil),
                .deleteObject(object: "a2"),
                .post(name: "Placed", object: "o2", userInfo: ["total": 10], posting: "now", coalesce: []),
                .notify(object: "order", keyPaths: ["state"]),
            ], id: "tx-1")
        #expect(result.revision == before + 1 && store.stats().revision == before + 1)
        #expect(result.id == "tx-1" && result.results.count == 7)
        guard case .created(let created) = result.results[2] else { Issue.record("no object"); return }
        #expect(created.id == "o2" && created.revision == result.revision && created.values["items"] == [])
        #expect(result.results[5] == .delivered(1))
        let admin = store.as(.admin)
        #expect(try admin.object("a0").values["balance"] == 90 && admin.object("a0").revision == result.revision)
        #expect(try admin.object("a1").values["note"] == "from a0")
        #expect(try admin.object("o2").values["items"] == ["sku"])
        #expect(throws: CoreError.self) { try admin.object("a2") }
        let events = try OwnedObjectTests.adminEvents(store).filter { $0.data["revision"] == .int(result.revision) }
        #expect(
            events.map(\.name) == [
                "valueChanged", "valueChanged", "valueChanged", "objectCreated", "valueChanged", "objectDeleted",
                "notificationPosted",
            ])
        #expect(events.allSatisfy { $0.data["tx"] == "tx-1" })
    }

    @Test("a refusal at any position leaves every object, the revision and the admin stream as they were")
    func refusalAtEachPosition() throws {
        let good: [Command.Action] = [
            Self.set("a0", "balance", 1),
            .createObject(id: "new", className: nil, values: ["x": 1], generatedID: "g"),
            .patch(object: "a1", values: ["balance": 2], ifRevision: nil),
            .deleteObject(object: "a2"),
            .mutate(object: "order", keyPath: "items", kind: "insertion", indexes: [0], values: ["a"], ifRevision: nil),
            Self.set("new", "x", 2),
        ]
        let refusals: [(Command.Action, CoreError.Code)] = [
            (Self.set("missing", "balance", 1), .notFound),
            (Self.set("a0", "balance", "text"), .typeMismatch),
            (.createObject(id: "a0", className: nil, values: [:], generatedID: "g"), .conflict),
            (
                .mutate(object: "order", keyPath: "items", kind: "removal", indexes: [7], values: [], ifRevision: nil),
                .indexOutOfRange
            ),
            (Self.set("a1", "balance", 5, ifRevision: 999), .revisionMismatch),
            (.post(name: "N", object: nil, userInfo: nil, posting: "asap", coalesce: []), .invalidRequest),
        ]
        for (refused, code) in refusals {
            for position in 0...good.count {
                let store = try Self.world()
                let before = try Self.fingerprint(store)
                var operations = good
                operations.insert(refused, at: position)
                do {
                    _ = try Self.run(store, operations, id: "t")
                    Issue.record("\(refused) at \(position) was applied")
                } catch {
                    #expect(error.code == code, "\(refused) at \(position): \(error.message)")
                    #expect(error.details["operation"] == .int(position))
                }
                #expect(try Self.fingerprint(store) == before, "\(refused) at \(position) left a trace")
            }
        }
    }

    @Test("an operation's ifRevision is the object's revision before the transaction")
    func ifRevisionBefore() throws {
        let store = try Self.world()
        let revision = try store.as(.admin).object("a0").revision
        _ = try Self.run(
            store,
            [Self.set("a0", "balance", 1, ifRevision: revision), Self.set("a0", "note", "x", ifRevision: revision)])
        #expect(try store.as(.admin).object("a0").values["note"] == "x")
    }

    @Test("expect: ifRevision, exists and where on the state before; the index and the revision in details")
    func expectations() throws {
        let store = try Self.world()
        let revision = try store.as(.admin).object("a0").revision
        let write = [Self.set("a0", "balance", 50)]
        let holding: [Transaction.Expectation] = [
            Transaction.Expectation(object: "a0", .ifRevision(revision)),
            Transaction.Expectation(object: "a0", .exists(true)),
            Transaction.Expectation(object: "nope", .exists(false)),
            Transaction.Expectation(object: "a0", .matches([["balance", ">=", 100], ["balance", "<", 101]])),
        ]
        let failing: [(Transaction.Expectation, CoreError.Code)] = [
            (Transaction.Expectation(object: "a0", .ifRevision(revision + 5)), .revisionMismatch),
            (Transaction.Expectation(object: "nope", .ifRevision(1)), .revisionMismatch),
            (Transaction.Expectation(object: "a0", .exists(false)), .conditionFailed),
            (Transaction.Expectation(object: "nope", .exists(true)), .conditionFailed),
            (Transaction.Expectation(object: "a0", .matches([["balance", ">", 100]])), .conditionFailed),
            (Transaction.Expectation(object: "nope", .matches([["balance", ">", 1]])), .conditionFailed),
            (Transaction.Expectation(object: "a0", .matches([["balance", "~", 1]])), .invalidRequest),
        ]
        for (expectation, code) in failing {
            let before = try Self.fingerprint(store)
            do {
                _ = try Self.run(store, write, expect: holding + [expectation])
                Issue.record("\(expectation) held")
            } catch {
                #expect(error.code == code, "\(expectation): \(error.message)")
                #expect(error.details["expect"] == .int(holding.count))
                if code != .invalidRequest {
                    let current: JSON = expectation.object == "a0" ? .int(revision) : .null
                    #expect(error.details["revision"] == current)
                }
            }
            #expect(try Self.fingerprint(store) == before)
        }
        _ = try Self.run(store, write, expect: holding)
        #expect(try store.as(.admin).object("a0").values["balance"] == 50)
    }

    @Test("a key set twice makes one record from before to after, none when it ends where it began")
    func oneRecordPerRegistration() throws {
        let store = try Self.world()
        let watcher = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).observe(
            observerID: watcher, objectID: "a0", keyPaths: ["balance"], options: [.new, .old, .prior], context: nil)
        _ = try store.as(.admin).observe(
            observerID: watcher, objectID: "order", keyPaths: ["items"], options: [.new, .old], context: nil)
        let first = try Self.run(
            store, [Self.set("a0", "balance", 90), Self.set("a0", "balance", 80)], id: "t1")
        var records = changeRecords(try store.eventLog(of: watcher))
        #expect(records.count == 2)
        #expect(records[0]["prior"] == true && records[0]["old"] == 100 && records[0]["new"] == nil)
        #expect(records[1]["old"] == 100 && records[1]["new"] == 80 && records[1]["kind"] == "setting")
        #expect(records.allSatisfy { $0["revision"] == .int(first.revision) && $0["tx"] == "t1" })
        _ = try Self.run(store, [Self.set("a0", "balance", 1), Self.set("a0", "balance", 80)])
        #expect(changeRecords(try store.eventLog(of: watcher)).count == 2, "back where it began: no record")
        // One operation: exactly its single request's record (a to-many insertion here).
        _ = try Self.run(
            store,
            [
                .mutate(
                    object: "order", keyPath: "items", kind: "insertion", indexes: [0], values: ["x"], ifRevision: nil)
            ])
        records = changeRecords(try store.eventLog(of: watcher))
        #expect(records.last?["kind"] == "insertion" && records.last?["indexes"] == [0] && records.last?["tx"] == nil)
    }

    @Test("per observer: prior records, change records, query records, then notifications")
    func recordOrder() throws {
        let store = try Self.world()
        let watcher = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).subscribe(observerID: watcher, name: "Moved", object: nil)
        _ = try store.as(.admin).registerQuery(
            observerID: watcher, definition: ["class": "Account", "where": [["balance", ">=", 100]]], options: ["new"])
        for id in ["a0", "a1"] {
            _ = try store.as(.admin).observe(
                observerID: watcher, objectID: id, keyPaths: ["balance"], options: [.new, .prior], context: nil)
        }
        _ = try Self.run(
            store,
            [
                .post(name: "Moved", object: nil, userInfo: nil, posting: "now", coalesce: []),
                Self.set("a0", "balance", 90), Self.set("a1", "balance", 110),
            ], id: "move")
        guard case .events(let events) = try store.eventLog(of: watcher).read(after: 0, limit: 100) else { return }
        let tail = events.suffix(6)
        #expect(tail.map(\.name) == ["change", "change", "change", "change", "query", "notification"])
        let flags = tail.prefix(4).map { String(decoding: $0.data, as: UTF8.self).contains("\"prior\":true") }
        #expect(flags == [true, true, false, false])
        #expect(tail.allSatisfy { String(decoding: $0.data, as: UTF8.self).contains(#""tx":"move""#) })
        let query = String(decoding: tail[tail.startIndex + 4].data, as: UTF8.self)
        #expect(query.contains(#""removed":[{"index":0,"id":"a0"}]"#), "one query record for both writes: \(query)")
    }

    @Test("a delete then a refusal puts the object back, its indexes and its retention too")
    func undoRestoresDeletes() throws {
        let store = try Self.world()
        let keeper = try store.as(.admin).createObserver(ObserverSettings(retainObserved: true)).observer.id
        _ = try store.as(.admin).observe(
            observerID: keeper, objectID: "a1", keyPaths: ["balance"], options: [.new], context: nil)
        let before = try Self.fingerprint(store)
        let classCount = try store.as(.admin).classInfo("Account").objectCount
        #expect(throws: CoreError.self) {
            try Self.run(store, [.deleteObject(object: "a0"), .deleteObject(object: "a1"), Self.set("zz", "k", 1)])
        }
        #expect(try Self.fingerprint(store) == before)
        #expect(try store.as(.admin).classInfo("Account").objectCount == classCount)
        let outcome = try Self.run(store, [.deleteObject(object: "a1")])
        #expect(outcome.results == [.releasePending(retainedBy: [keeper])])
    }

    @Test("many objects touched, some twice: undone whole on a refusal, applied whole otherwise")
    func manyObjects() throws {
        let store = try Self.world(accounts: 20)
        let revisions = try (0..<20).map { try store.as(.admin).object("a\($0)").revision }
        var operations = (0..<20).map { Self.set("a\($0)", "balance", .int($0)) }
        operations += (0..<20).map { Self.set("a\($0)", "note", "n", ifRevision: revisions[$0]) }
        let before = try Self.fingerprint(store)
        #expect(throws: CoreError.self) { try Self.run(store, operations + [Self.set("a3", "balance", "x")]) }
        #expect(try Self.fingerprint(store) == before)
        let result = try Self.run(store, operations)
        #expect(try store.as(.admin).object("a17").values == ["balance": 17, "note": "n"])
        #expect(try store.as(.admin).object("a17").revision == result.revision)
    }

    @Test("limits and shape: no operations, too many, an id outside the alphabet")
    func shape() throws {
        var limits = StoreLimits()
        limits.maxTransactionOps = 3
        let store = Store(limits: limits)
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: [:])
        func code(_ operations: [Command.Action], id: String? = nil) -> CoreError.Code? {
            do {
                _ = try Self.run(store, operations, id: id)
                return nil
            } catch { return error.code }
        }
        #expect(code([]) == .invalidRequest)
        #expect(code(Array(repeating: Self.set("a", "k", 1), count: 4)) == .limitExceeded)
        #expect(code(Array(repeating: Self.set("a", "k", 1), count: 3)) == nil)
        #expect(code([Self.set("a", "k", 1)], id: "no spaces") == .invalidRequest)
        #expect(code([.deleteClass(name: "X")]) == .invalidRequest)
    }

    @Test("a scoped token's operation outside its scopes refuses the whole transaction with its index")
    func scopedRefusal() throws {
        let store = try Self.world()
        let token = try store.as(.admin).createToken(
            scopes: [["allow": ["read", "write"], "ids": "a0"], ["allow": ["read", "write"], "ids": "a1"]], secret: "s")
        let before = try Self.fingerprint(store)
        let operations = [Self.set("a0", "balance", 1), Self.set("a2", "balance", 1)]
        do {
            _ = try store.as(.token(token.id)).transaction(Transaction(id: nil, expect: [], operations: operations))
            Issue.record("a2 is outside the token's scopes")
        } catch {
            #expect(error.code == .forbidden && error.details["operation"] == 1)
        }
        #expect(try Self.fingerprint(store) == before)
        _ = try store.as(.token(token.id)).transaction(
            Transaction(id: nil, expect: [], operations: [Self.set("a0", "balance", 1), Self.set("a1", "balance", 2)]))
    }

    @Test("the id is the idempotency key: the same transaction again answers the same and changes nothing")
    func idempotentReplay() throws {
        let store = try Self.world()
        let transaction = Transaction(id: "once", expect: [], operations: [Self.set("a0", "balance", 7)])
        let claim = IdempotencyClaim(key: "admin tx once", fingerprint: "f1", answerMembers: [:])
        let first = try store.execute(Command(time: .now(), .transaction(transaction), as: .admin, idempotency: claim))
        let revision = store.stats().revision
        let again = try store.execute(Command(time: .now(), .transaction(transaction), as: .admin, idempotency: claim))
        guard case .transaction = first, case .replayed = again else { Issue.record("\(first) \(again)"); return }
        #expect(store.stats().revision == revision)
        let other = IdempotencyClaim(key: "admin tx once", fingerprint: "f2", answerMembers: [:])
        #expect {
            try store.execute(Command(time: .now(), .transaction(transaction), as: .admin, idempotency: other))
        } throws: { ($0 as? CoreError)?.code == .idempotencyKeyReused }
    }

    @Test("a transaction command survives its encoding")
    func encoding() throws {
        let transaction = Transaction(
            id: "t",
            expect: [
                Transaction.Expectation(object: "a", .matches([["k", "==", 1]])),
                Transaction.Expectation(object: "b", .exists(false)),
            ],
            operations: [
                Self.set("a", "k", ["x": 1], ifRevision: 3),
                .createObject(id: nil, className: "C", values: ["v": 1], generatedID: "obj_1", owner: "o"),
                .post(name: "N", object: nil, userInfo: nil, posting: "now", coalesce: []),
            ])
        let command = Command(time: Timestamp(milliseconds: 5), .transaction(transaction), as: .token("tok"), by: "c")
        #expect(try Command(decoding: command.encoded()) == command)
    }
}
