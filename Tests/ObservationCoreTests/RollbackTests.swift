import ObservationCore
import Testing

@Suite("Rollback: back to what the data directory holds")
struct RollbackTests {
    /// A store with a durable history: an object, an observer watching it, one published change.
    private func durableStore() throws -> (Store, DataDirectory, String) {
        let store = try Store(restoring: PersistedImage())
        var directory = DataDirectory()
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        let id = try store.as(.admin).createObserver(ObserverSettings(name: "w", lease: 300)).observer.id
        _ = try store.as(.admin).observe(observerID: id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        _ = try store.as(.admin).setValue(1, of: "a", at: "n")
        directory.apply(store.takeBatch())
        return (store, directory, id)
    }

    @Test("undone writes leave nothing: state, events and ids are the data directory's, streams stay attached")
    func undoesWhatIsNotDurable() throws {
        let (store, durable, id) = try durableStore()
        var directory = durable
        let log = try store.openStream(of: id)
        directory.apply(store.takeBatch())  // the stream's opening
        let before = try visibleState(store)
        let positions = directory.image.lastPosition

        // Two writes whose commit fails, one more after the batch was taken, and a new observer.
        _ = try store.as(.admin).setValue(2, of: "a", at: "n")
        _ = try store.as(.admin).createObject(id: "b", className: nil, values: [:])
        let failed = store.takeBatch()
        _ = try store.as(.admin).setValue(3, of: "a", at: "n")
        let newcomer = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        #expect(log.lastID == 3, "the undone writes made events (not shown)")

        let undone = try store.rollBack(to: directory.image, undoing: failed, at: Timestamp(milliseconds: 0))
        #expect(try visibleState(store) == before)
        #expect(undone.revision == store.stats().revision)
        #expect(undone.undoneThrough == store.journalSequence && undone.undoneThrough > failed.sequence)
        #expect(throws: CoreError.self) { try store.as(.admin).observer(newcomer) }
        #expect(log.lastID == 1 && held(log).count == 1, "the log holds only the published event")
        #expect(try store.openStream(of: id) === log, "the observer reads the same log: its streams go on")

        // What follows takes the next event id and a position after every undone one.
        _ = try store.as(.admin).setValue(4, of: "a", at: "n")
        let next = store.takeBatch()
        #expect(next.commands.map(\.position).allSatisfy { $0 > failed.sequence })
        #expect(next.commands.first.map { $0.position > positions } == true)
        next.publish()
        #expect(held(log).map { $0.split(separator: " ")[0] } == ["1", "2"])
        #expect(held(log).last?.contains("\"new\":4") == true)
    }

    @Test("an undone removal brings the observer back with its log; its lease counts from the rollback")
    func undoesARemoval() throws {
        let (store, durable, id) = try durableStore()
        var directory = durable
        let log = try store.openStream(of: id)
        store.closeStream(of: id)
        directory.apply(store.takeBatch())
        _ = try store.as(.admin).deleteObserver(id)
        let failed = store.takeBatch()
        try store.rollBack(to: directory.image, undoing: failed, at: Timestamp(milliseconds: 5_000))
        let back = try store.as(.admin).observer(id)
        #expect(back.registrations.count == 1)
        #expect(back.expiresAt == Timestamp(milliseconds: 305_000))
        #expect(try store.openStream(of: id) === log)
        _ = try store.as(.admin).setValue(7, of: "a", at: "n")
        store.takeBatch().publish()
        #expect(held(log).last?.hasPrefix("2 change") == true)
    }

    @Test("a store rolled back equals one rebuilt from the same data directory")
    func equalsARestart() throws {
        let (store, directory, _) = try durableStore()
        _ = try store.as(.admin).defineClass("T", definition: ["properties": ["x": ["type": "number"]]])
        _ = try store.as(.admin).post(name: "later", object: nil, userInfo: [:], style: .idle)
        let failed = store.takeBatch()
        try store.rollBack(to: directory.image, undoing: failed, at: Timestamp(milliseconds: 0))
        #expect(try visibleState(store) == visibleState(Store(restoring: directory.image)))
        #expect(store.flushQueued(.idle) == 0, "the undone posting is gone")
    }

    @Test("after a rollback, a restart continues positions after the highest stored one (the gap stays a gap)")
    func restartAfterARollback() throws {
        let (store, durable, _) = try durableStore()
        var directory = durable
        _ = try store.as(.admin).setValue(2, of: "a", at: "n")
        let failed = store.takeBatch()
        try store.rollBack(to: directory.image, undoing: failed, at: Timestamp(milliseconds: 0))
        _ = try store.as(.admin).setValue(3, of: "a", at: "n")
        let after = store.takeBatch()
        directory.apply(after)
        let stored = try #require(after.commands.last?.position)
        let restarted = try Store(restoring: directory.image)
        #expect(restarted.journalSequence == stored)
        let next = try restarted.submit(
            Command(
                time: Timestamp(milliseconds: 1),
                .setValue(
                    object: "a", keyPath: "n", value: 4, ifRevision: nil), as: .admin))
        #expect(try #require(next.ticket) > stored, "a new change never takes a stored position")
        #expect(try restarted.as(.admin).value(of: "a", at: "n").value == 4)
    }

    @Test(
        "an observer's log made anew by a rollback shows its durable events; a kept log whose observer is undone ends")
    func freshAndOrphanedLogs() throws {
        let (store, durable, id) = try durableStore()
        var directory = durable
        // Durable: the observer's log will be made anew (it held no unpublished events, and the
        // observer is gone from the live state when the rollback comes).
        _ = try store.as(.admin).deleteObserver(id)
        let newcomer = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        let orphan = try store.openStream(of: newcomer)
        let failed = store.takeBatch()
        try store.rollBack(to: directory.image, undoing: failed, at: Timestamp(milliseconds: 0))
        let back = try store.openStream(of: id)
        #expect(back.visibleID == back.lastID && back.lastID >= 1, "its replayed durable events are shown")
        #expect(orphan.isClosed, "the undone observer's stream ends")
        directory.apply(store.takeBatch())
    }
}
