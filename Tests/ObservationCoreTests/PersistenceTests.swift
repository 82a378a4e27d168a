import ObservationCore
import Testing

/// A data directory in memory: rows by (kind, id), updated the way the database applies a batch.
private struct RowTable {
    var rows: [String: PersistedRow] = [:]
    var revision = 0
    var adminLastEventID = 0

    mutating func apply(_ batch: JournalBatch) {
        for row in batch.rows() {
            rows["\(row.kind.rawValue)/\(row.id)"] = row.document == nil ? nil : row
        }
        revision = batch.revision
        adminLastEventID = batch.adminLastEventID
    }

    var image: PersistedImage {
        PersistedImage(rows: Array(rows.values), revision: revision, adminLastEventID: adminLastEventID)
    }
}

/// Everything a client can see of a store, for comparing before and after a restart.
private func visibleState(_ store: Store) throws -> [String] {
    let objects = try store.objects(className: nil, limit: 1000, after: nil).objects.map {
        String(decoding: JSON.object($0.json).encoded(), as: UTF8.self)
    }
    let classes = store.classes().map {
        "\($0.schema.name) \($0.revision) \(String(decoding: JSON.object($0.schema.json).encoded(), as: UTF8.self))"
    }
    let observers = try store.observers().map { summary in
        let observer = try store.observer(summary.id)
        return "\(observer.id) \(observer.name) \(observer.lease) \(observer.lastEventID) "
            + "\(observer.registrations.map { String(decoding: JSON.object($0.json).encoded(), as: UTF8.self) }) "
            + "\(observer.subscriptionList.map { String(decoding: JSON.object($0.json).encoded(), as: UTF8.self) })"
    }
    let stats = store.stats()
    return objects + classes + observers + ["revision \(stats.revision)", "observations \(stats.observations)"]
}

@Suite("Persistence: journal, batches and restoring")
struct PersistenceTests {
    @Test("a store rebuilt from its committed rows shows the same state, and its registrations still fire")
    func roundTrip() throws {
        let store = try Store(restoring: PersistedImage())
        var table = RowTable()
        _ = try store.defineClass(
            "Person",
            definition: ["properties": ["name": ["type": "string"], "friend": ["type": "ref", "class": "Person"]]])
        _ = try store.createObject(id: "a", className: "Person", values: ["name": "Ann"])
        _ = try store.createObject(id: "b", className: "Person", values: ["name": "Bob", "friend": ["$ref": "a"]])
        _ = try store.createObject(id: "gone", className: nil, values: ["x": 1])
        let watcher = try store.createObserver(ObserverSettings(name: "w", lease: 300, retainObserved: true))
        let id = watcher.observer.id
        _ = try store.observe(
            observerID: id, objectID: "b", keyPaths: ["friend.name", "name"], options: [.new, .old, .initial],
            context: "ctx")
        _ = try store.subscribe(observerID: id, name: "ping", object: nil)
        table.apply(store.takeJournalBatch())
        _ = try store.setValue("Anna", of: "a", at: "name")
        _ = try store.deleteObject("gone")
        _ = try store.deleteObject("b")  // retained: pending release
        table.apply(store.takeJournalBatch())
        let lastEventID = try store.observer(id).lastEventID
        #expect(lastEventID == 3)  // two initial records, one change

        let restored = try Store(restoring: table.image)
        #expect(try visibleState(restored) == visibleState(store))
        #expect(restored.observerID(forToken: watcher.token) == id)

        // The rebuilt registration follows the reference; its ids continue after the stored ones.
        let log = try restored.openStream(of: id)
        _ = try restored.setValue("Annie", of: "a", at: "name")
        #expect(log.lastID == lastEventID + 1)
        // Releasing the retained object deletes it, as before the restart.
        _ = try restored.unobserve(observerID: id, objectID: "b")
        #expect(throws: CoreError.self) { try restored.object("b") }
    }

    @Test("events reach streams only once their batch is published (durable)")
    func eventsWaitForPublish() throws {
        let store = try Store(restoring: PersistedImage())
        _ = try store.createObject(id: "a", className: nil, values: ["n": 1])
        let id = try store.createObserver(ObserverSettings()).observer.id
        _ = try store.observe(observerID: id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        let log = try store.openStream(of: id)
        _ = try store.setValue(2, of: "a", at: "n")
        guard case .upToDate = log.read(after: 0) else {
            Issue.record("an event was visible before its batch was durable")
            return
        }
        store.takeJournalBatch().publish()
        guard case .events(let events) = log.read(after: 0) else {
            Issue.record("the published event is not visible")
            return
        }
        #expect(events.map(\.id) == [1])
    }

    @Test("a batch holds each changed entity once, and the journal sequence counts changes")
    func batchesDeduplicate() throws {
        let store = try Store(restoring: PersistedImage())
        _ = try store.createObject(id: "a", className: nil, values: ["n": 1])
        for value in 2...50 { _ = try store.setValue(.int(value), of: "a", at: "n") }
        #expect(store.journalSequence == 50)
        let batch = store.takeJournalBatch()
        #expect(batch.sequence == 50)
        #expect(batch.rows().map(\.id) == ["a"])
        #expect(store.takeJournalBatch().isEmpty)
        // A refused change marks nothing.
        #expect(throws: CoreError.self) { try store.setValue(1, of: "missing", at: "n") }
        #expect(store.journalSequence == 50)
    }

    @Test("an event stores its observer's last id in a small row of its own; ids continue from it")
    func lastEventIDRows() throws {
        let store = try Store(restoring: PersistedImage())
        var table = RowTable()
        _ = try store.createObject(id: "a", className: nil, values: ["n": 0])
        let id = try store.createObserver(ObserverSettings()).observer.id
        _ = try store.observe(observerID: id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        table.apply(store.takeJournalBatch())
        for value in 1...5 { _ = try store.setValue(.int(value), of: "a", at: "n") }
        let batch = store.takeJournalBatch()
        let rows = batch.rows()
        #expect(Set(rows.map { "\($0.kind.rawValue)/\($0.id)" }) == ["object/a", "lastEventId/\(id)"])
        #expect(rows.first { $0.kind == .lastEventID }?.document == Array(#"{"lastEventId":5}"#.utf8))
        table.apply(batch)

        let restored = try Store(restoring: table.image)
        #expect(try restored.observer(id).lastEventID == 5)
        let log = try restored.openStream(of: id)
        _ = try restored.setValue(6, of: "a", at: "n")
        #expect(log.lastID == 6)

        // Removing the observer removes its row too; a row without its observer is refused.
        _ = try store.deleteObserver(id)
        table.apply(store.takeJournalBatch())
        #expect(table.image.rows.allSatisfy { $0.id != id })
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
        _ = try store.createObject(id: "a", className: nil, values: ["n": 0])
        func rounds(_ range: ClosedRange<Int>) throws -> Duration {
            let started = ContinuousClock.now
            for value in range {
                _ = store.takeJournalBatch()
                _ = try store.setValue(.int(value), of: "a", at: "n")
            }
            return ContinuousClock.now - started
        }
        let first = try rounds(1...2_000)
        _ = try rounds(2_001...18_000)
        let last = try rounds(18_001...20_000)
        #expect(signals.withLock { $0 } == 20_001)
        #expect(last < first * 3 + .milliseconds(50), "first 2,000: \(first), last 2,000: \(last)")
    }

    @Test("an in-memory store keeps no journal and shows events at once")
    func inMemoryKeepsNoJournal() throws {
        let store = Store()
        _ = try store.createObject(id: "a", className: nil, values: ["n": 1])
        #expect(store.journalSequence == 0)
        #expect(store.takeJournalBatch().isEmpty)
    }

    @Test("a damaged row is refused with the entity it belongs to")
    func damagedRowsAreRefused() {
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
    }
}
