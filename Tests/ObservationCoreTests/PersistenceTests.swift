import ObservationCore
import Testing

@Suite("Persistence: the command log, checkpoints and restoring")
struct PersistenceTests {
    /// Builds the same history in a store, committing and checkpointing along the way.
    private func history(checkpointAfterSetup: Bool) throws -> (Store, DataDirectory, CreatedObserver) {
        let store = try Store(restoring: PersistedImage())
        var directory = DataDirectory()
        _ = try store.as(.admin).defineClass(
            "Person",
            definition: ["properties": ["name": ["type": "string"], "friend": ["type": "ref", "class": "Person"]]])
        _ = try store.as(.admin).createObject(id: "a", className: "Person", values: ["name": "Ann"])
        _ = try store.as(.admin).createObject(
            id: "b", className: "Person", values: ["name": "Bob", "friend": ["$ref": "a"]])
        _ = try store.as(.admin).createObject(id: "gone", className: nil, values: ["x": 1])
        let watcher = try store.as(.admin).createObserver(ObserverSettings(name: "w", lease: 300, retainObserved: true))
        _ = try store.as(.admin).observe(
            observerID: watcher.observer.id, objectID: "b", keyPaths: ["friend.name", "name"],
            options: [.new, .old, .initial], context: "ctx")
        _ = try store.as(.admin).subscribe(observerID: watcher.observer.id, name: "ping", object: nil)
        directory.apply(store.takeBatch(checkpoint: checkpointAfterSetup))
        _ = try store.as(.admin).setValue("Anna", of: "a", at: "name")
        _ = try store.as(.admin).deleteObject("gone")
        _ = try store.as(.admin).deleteObject("b")  // retained: pending release
        _ = try store.as(.admin).post(name: "later", object: nil, userInfo: ["n": 1], style: .idle)
        directory.apply(store.takeBatch())
        return (store, directory, watcher)
    }

    @Test(
        "a store rebuilt from its checkpoint and commands is the same store: state, events, and what follows",
        arguments: [false, true])
    func roundTrip(checkpoint: Bool) throws {
        let (store, directory, watcher) = try history(checkpointAfterSetup: checkpoint)
        let id = watcher.observer.id
        #expect(try store.as(.admin).observer(id).lastEventID == 3)  // two initial records, one change
        #expect(directory.image.commands.count == (checkpoint ? 4 : 11))

        let restored = try Store(restoring: directory.image)
        #expect(try visibleState(restored) == visibleState(store))
        #expect(restored.observerID(forToken: watcher.token) == id)
        // The commands after the checkpoint made their events again: the same ids, the same bytes.
        let original = try store.openStream(of: id)
        let replayed = try restored.openStream(of: id)
        if !checkpoint { #expect(held(replayed) == held(original)) }
        #expect(held(replayed).last == held(original).last)

        // Both go on alike: the same command, the same answer and the same event.
        for each in [store, restored] {
            _ = try each.as(.admin).setValue("Annie", of: "a", at: "name")
            each.takeBatch().publish()
        }
        #expect(held(replayed).last == held(original).last)
        #expect(restored.flushQueued(.idle) == 1, "the queued posting survived")
        // Releasing the retained object deletes it, as before the restart.
        _ = try restored.as(.admin).unobserve(observerID: id, objectID: "b")
        #expect(throws: CoreError.self) { try restored.as(.admin).object("b") }
    }

    @Test("events reach streams only once their batch is published (durable)")
    func eventsWaitForPublish() throws {
        let store = try Store(restoring: PersistedImage())
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 1])
        let id = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).observe(observerID: id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        let log = try store.openStream(of: id)
        _ = try store.as(.admin).setValue(2, of: "a", at: "n")
        guard case .upToDate = log.read(after: 0) else {
            Issue.record("an event was visible before its batch was durable")
            return
        }
        store.takeBatch().publish()
        guard case .events(let events) = log.read(after: 0) else {
            Issue.record("the published event is not visible")
            return
        }
        #expect(events.map(\.id) == [1])
    }

    @Test("a command's encoding is fixed, field by field: a log written today is read by later versions")
    func commandEncodingIsStable() throws {
        let time = Timestamp(milliseconds: 1_700_000_000_123)
        let cases: [(Command, String)] = [
            (
                Command(
                    time: time, .setValue(object: "a", keyPath: "n.m", value: ["x": 1], ifRevision: 7), as: .admin,
                    by: "c1"),
                #"{"v":1,"t":1700000000123,"a":"setValue","object":"a","keyPath":"n.m","value":{"x":1},"ifRevision":7,"by":"c1"}"#
            ),
            (
                Command(
                    time: time,
                    .observe(
                        observer: "w", object: "a", keyPaths: ["n"], options: ["new", "old"], context: nil,
                        registrationIDs: ["r1"], throttle: nil), as: .admin),
                #"{"v":1,"t":1700000000123,"a":"observe","observer":"w","object":"a","keyPaths":["n"],"options":["new","old"],"registrationIds":["r1"]}"#
            ),
            (
                Command(time: time, .closeStream(observer: nil, holder: "node-2"), as: .server),
                #"{"v":1,"t":1700000000123,"a":"closeStream","holder":"node-2"}"#
            ),
            (Command(time: time, .expireLeases, as: .server), #"{"v":1,"t":1700000000123,"a":"expireLeases"}"#),
        ]
        for (command, expected) in cases {
            #expect(String(decoding: command.encoded(), as: UTF8.self) == expected)
            #expect(try Command(decoding: Array(expected.utf8)) == command)
        }
    }

    @Test("a batch carries each applied command once, by position; a checkpoint each changed entity once")
    func batches() throws {
        let store = try Store(restoring: PersistedImage())
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 1])
        for value in 2...50 { _ = try store.as(.admin).setValue(.int(value), of: "a", at: "n") }
        #expect(store.journalSequence == 50)
        // A refused command is not journalled.
        #expect(throws: CoreError.self) { try store.as(.admin).setValue(1, of: "missing", at: "n") }
        #expect(store.journalSequence == 50)
        let batch = store.takeBatch()
        #expect(batch.sequence == 50 && batch.checkpoint == nil)
        #expect(batch.commands.map(\.position) == Array(1...50))
        let last = try Command(decoding: batch.commands.last?.bytes ?? [])
        #expect(last.action == .setValue(object: "a", keyPath: "n", value: 50, ifRevision: nil))
        #expect(store.takeBatch().isEmpty)
        let checkpoint = store.takeBatch(checkpoint: true)
        #expect(checkpoint.checkpoint?.position == 50)
        #expect(checkpoint.checkpoint?.rows().map(\.id) == ["a"])
        // Past `checkpointEvery` commands, the next batch is a checkpoint by itself.
        for value in 1...3 { _ = try store.as(.admin).setValue(.int(value), of: "a", at: "n") }
        #expect(store.takeBatch(checkpointEvery: 3).checkpoint?.position == 53)
    }

    @Test("a checkpoint stores an observer's last event id in a small row of its own; ids continue from it")
    func lastEventIDRows() throws {
        let store = try Store(restoring: PersistedImage())
        var directory = DataDirectory()
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        let id = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).observe(observerID: id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        directory.apply(store.takeBatch(checkpoint: true))
        for value in 1...5 { _ = try store.as(.admin).setValue(.int(value), of: "a", at: "n") }
        let batch = store.takeBatch(checkpoint: true)
        let rows = batch.checkpoint?.rows() ?? []
        #expect(Set(rows.map { "\($0.kind.rawValue)/\($0.id)" }) == ["object/a", "lastEventId/\(id)"])
        #expect(rows.first { $0.kind == .lastEventID }?.document == Array(#"{"lastEventId":5}"#.utf8))
        directory.apply(batch)

        let restored = try Store(restoring: directory.image)
        #expect(try restored.as(.admin).observer(id).lastEventID == 5)
        let log = try restored.openStream(of: id)
        _ = try restored.as(.admin).setValue(6, of: "a", at: "n")
        #expect(log.lastID == 6)

        // Removing the observer removes its row too; a row without its observer is refused.
        _ = try store.as(.admin).deleteObserver(id)
        directory.apply(store.takeBatch(checkpoint: true))
        #expect(directory.image.rows.allSatisfy { $0.id != id })
        let orphan = PersistedRow(kind: .lastEventID, id: "obs_gone", document: Array(#"{"lastEventId":1}"#.utf8))
        #expect(throws: PersistenceError.self) { try Store(restoring: PersistedImage(rows: [orphan])) }
    }

    @Test("the journal's wake-up call costs the same on the 20,000th change as on the first")
    func journalSignalStaysCheap() throws {
        // A bare closure kept as a lock's generic state was re-wrapped in a reabstraction thunk by
        // every inout access, so each signal walked a longer chain: slower and slower, then a stack
        // overflow in a long-running durable server.
        let store = try Store(restoring: PersistedImage())
        let signals = Locked(0)
        store.onJournal { signals.withLock { $0 += 1 } }
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        func rounds(_ range: ClosedRange<Int>) throws -> Duration {
            let started = ContinuousClock.now
            for value in range {
                _ = store.takeBatch()
                _ = try store.as(.admin).setValue(.int(value), of: "a", at: "n")
            }
            return ContinuousClock.now - started
        }
        // The fastest of five blocks of 400, at the start and at the end: a block the scheduler
        // interrupts (the other suites run alongside) does not count, a slower signal does.
        func fastestBlock(from start: Int) throws -> Duration {
            try (0..<5).map { block in try rounds(start + block * 400...start + block * 400 + 399) }.min()!
        }
        let first = try fastestBlock(from: 1)
        _ = try rounds(2_001...18_000)
        let last = try fastestBlock(from: 18_001)
        #expect(signals.withLock { $0 } == 20_001)
        #expect(last < first * 3 + .milliseconds(10), "first: \(first), last: \(last) (the fastest 400 of each)")
    }

    @Test("an in-memory store keeps no journal and shows events at once")
    func inMemoryKeepsNoJournal() throws {
        let store = Store()
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 1])
        #expect(store.journalSequence == 0)
        #expect(store.takeBatch().isEmpty)
    }

    @Test("a damaged row, or a stored command that no longer applies, is refused with what it belongs to")
    func damagedDataIsRefused() {
        for document in ["{", "[]", #"{"class": null, "revision": "x"}"#] {
            let image = PersistedImage(rows: [PersistedRow(kind: .object, id: "a", document: Array(document.utf8))])
            #expect(throws: PersistenceError.self) { try Store(restoring: image) }
        }
        let orphan = PersistedRow(
            kind: .registration, id: "reg_1",
            document: Array(
                #"{"observer": "obs_x", "object": "a", "keyPath": "n", "options": [], "context": null, "createdAt": 0, "sequence": 1}"#
                    .utf8))
        #expect(throws: PersistenceError.self) { try Store(restoring: PersistedImage(rows: [orphan])) }
        let stale = Command(
            time: Timestamp(milliseconds: 1), .setValue(object: "a", keyPath: "n", value: 1, ifRevision: nil),
            as: .admin)
        #expect(throws: PersistenceError.self) {
            try Store(restoring: PersistedImage(commands: [(1, stale.encoded())]))
        }
        #expect(throws: PersistenceError.self) {
            try Store(restoring: PersistedImage(commands: [(1, Array("nope".utf8))]))
        }
    }

    // MARK: - Idempotency keys across a restart

    /// A keyed set of `n` at `milliseconds` after now.
    private func keyedSet(_ store: Store, _ value: Int, key: String, request: String, at milliseconds: Int64)
        throws -> Outcome
    {
        try store.execute(
            Command(
                time: Timestamp(milliseconds: Timestamp.now().milliseconds + milliseconds),
                .setValue(object: "a", keyPath: "n", value: .int(value), ifRevision: nil), as: .admin,
                idempotency: IdempotencyClaim(key: key, fingerprint: request)))
    }

    @Test("the journal is applied again as it was: a key evicted then reused is a write again, whatever the limit now")
    func journalReplaysKeysAsApplied() throws {
        let store = try Store(limits: StoreLimits(maxIdempotencyKeys: 1), restoring: PersistedImage())
        var directory = DataDirectory()
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        _ = try keyedSet(store, 1, key: "A", request: "first", at: 1_000)
        _ = try keyedSet(store, 2, key: "B", request: "second", at: 1_001)  // evicts A (limit 1)
        guard case .revision = try keyedSet(store, 3, key: "A", request: "third", at: 1_002) else {
            Issue.record("A was evicted: its reuse is a fresh write")
            return
        }
        directory.apply(store.takeBatch())
        // A limit raised since must not make the replay refuse (or swallow) the third write.
        let restarted = try Store(limits: StoreLimits(maxIdempotencyKeys: 100), restoring: directory.image)
        #expect(try restarted.as(.admin).value(of: "a", at: "n").value == 3)
        #expect(try visibleState(restarted) == visibleState(store))
    }

    @Test("keys leave in the order they came, after a restore from a checkpoint too")
    func keysLeaveInArrivalOrder() throws {
        let limits = StoreLimits(maxIdempotencyKeys: 2)
        let store = try Store(limits: limits, restoring: PersistedImage())
        var directory = DataDirectory()
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        // Same command time (one millisecond): arrival order is z, then a.
        _ = try keyedSet(store, 1, key: "z", request: "r", at: 5_000)
        _ = try keyedSet(store, 2, key: "a", request: "r", at: 5_000)
        directory.apply(store.takeBatch(checkpoint: true))
        let restored = try Store(limits: limits, restoring: directory.image)
        for copy in [store, restored] {
            _ = try keyedSet(copy, 3, key: "m", request: "r", at: 5_001)  // one must go: the first to come, z
            let replayedZ = try keyedSet(copy, 3, key: "z", request: "other", at: 5_002)
            #expect({ if case .revision = replayedZ { true } else { false } }(), "z left first, so it is free")
        }
    }
}
