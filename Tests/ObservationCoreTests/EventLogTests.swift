import Testing

@testable import ObservationCore

/// What streams may see of an event log: whole revisions only, and on a durable server only
/// what is durable; and the revision a stream may call settled.
@Suite("Event logs: what streams may see")
struct EventLogTests {
    func event(_ id: Int, revision: Int) -> Event {
        Event(id: id, name: "change", data: Array("{}".utf8), revision: revision)
    }

    func ids(_ result: EventLog.ReadResult) -> [Int] {
        if case .events(let events) = result { events.map(\.id) } else { [] }
    }

    /// Attaches a stream that has nothing yet and only listens (a log wakes only when someone listens).
    func listen(to log: EventLog) {
        _ = log.attach(cursor: 0, reader: EventLog.Reader(wake: {}, abort: {}))
    }

    @Test("a durable log shows a batch only once it is both published and wholly appended")
    func publishedBeforeRevealed() {
        let log = EventLog(label: "o", capacity: 10, gated: true)
        listen(to: log)
        // The commit is durable (published through 3) while the outbox is still appending.
        #expect(log.append(event(1, revision: 7), batch: 1))
        #expect(!log.append(event(2, revision: 7), batch: 1))
        log.publish(through: 3)
        #expect(ids(log.read(after: 0)) == [], "part of revision 7 is not shown")
        #expect(log.visibleID == 0)
        _ = log.append(event(3, revision: 7), batch: 1)
        #expect(log.reveal())
        #expect(ids(log.read(after: 0)) == [1, 2, 3])
        #expect(log.visibleID == 3)
    }

    @Test("an in-memory log shows a batch at its reveal, a durable one at the later of reveal and publish")
    func revealThenPublish() {
        let memory = EventLog(label: "m", capacity: 10)
        listen(to: memory)
        _ = memory.append(event(1, revision: 1), batch: 1)
        #expect(ids(memory.read(after: 0)) == [])
        #expect(memory.reveal())
        #expect(ids(memory.read(after: 0)) == [1])
        let durable = EventLog(label: "d", capacity: 10, gated: true)
        listen(to: durable)
        _ = durable.append(event(1, revision: 1), batch: 1)
        #expect(!durable.reveal(), "nothing new to show before the publish")
        #expect(ids(durable.read(after: 0)) == [])
        durable.publish(through: 1)
        #expect(ids(durable.read(after: 0)) == [1])
    }

    @Test("a log nobody listens to asks for no wake, yet shows what it revealed; a listener makes it ask once")
    func wakesOnlyListeners() {
        let log = EventLog(label: "a", capacity: 10)
        _ = log.append(event(1, revision: 1), batch: 1)
        #expect(!log.reveal(), "nobody to wake")
        #expect(ids(log.read(after: 0)) == [1], "shown all the same: a stream that comes later reads it")
        #expect(log.waitForEvents(after: 0, {}) == nil, "a waiter that comes later does not wait for it")
        listen(to: log)
        _ = log.append(event(2, revision: 2), batch: 2)
        #expect(log.reveal())
        _ = log.append(event(3, revision: 3), batch: 3)
        #expect(!log.reveal(), "woken already: the wake is pending")
        log.wake()
        _ = log.append(event(4, revision: 4), batch: 4)
        #expect(log.reveal())
    }

    @Test("the settled revision follows commands that make no event (a class defined, deleted)")
    func settledRevisionWithoutEvents() throws {
        let store = Store()
        _ = try store.as(.admin).defineClass("Point", definition: ["properties": ["x": ["type": "number"]]])
        #expect(store.settledRevision == store.stats().revision)
        _ = try store.as(.admin).deleteClass("Point")
        #expect(store.settledRevision == store.stats().revision)
        #expect(store.settledRevision == 2)
    }

    @Test("a barrier sits after the events applied before it, whatever comes after")
    func barrierPosition() throws {
        let store = Store()
        let observer = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        _ = try store.as(.admin).observe(
            observerID: observer, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        let log = try store.eventLog(of: observer)
        let barriers = Locked<[(afterID: Int, revision: Int)]>([])
        _ = log.attach(
            cursor: 0,
            reader: EventLog.Reader(
                wake: {}, abort: {},
                barrier: { afterID, revision in barriers.withLock { $0.append((afterID, revision)) } }))
        _ = try store.as(.admin).setValue(1, of: "a", at: "n")
        guard case .barrier(let revision) = try store.as(.admin).issue(.progress(observer: observer)) else {
            Issue.record("not a barrier")
            return
        }
        _ = try store.as(.admin).setValue(2, of: "a", at: "n")
        let got = barriers.withLock { $0 }
        #expect(got.count == 1)
        #expect(got.first?.afterID == log.lastID - 1 && got.first?.revision == revision)
    }

    @Test("a waiter (a poll) is woken once by the next wake, only while nothing is visible after its cursor")
    func waiters() {
        let log = EventLog(label: "o", capacity: 2, gated: true)
        let woken = Locked(0)
        #expect(log.waitForEvents(after: 0) { woken.withLock { $0 += 1 } } != nil)
        _ = log.append(event(1, revision: 1), batch: 1)
        _ = log.reveal()
        #expect(log.waitForEvents(after: 0) { woken.withLock { $0 += 1 } } != nil, "revealed, not published")
        log.publish(through: 1)
        #expect(log.waitForEvents(after: 0) { Issue.record("event 1 is visible") } == nil)
        log.wake()
        #expect(woken.withLock { $0 } == 2)
        log.wake()
        #expect(woken.withLock { $0 } == 2, "once: a waiter that found nothing waits again")
        let token = log.waitForEvents(after: 1) { Issue.record("cancelled") }
        #expect(token != nil)
        if let token { log.cancelWait(token) }
        log.wake()
        // Not a stream: never cut off or counted, whatever leaves the buffer.
        _ = log.waitForEvents(after: 1) { woken.withLock { $0 += 1 } }
        for id in 2...5 { _ = log.append(event(id, revision: id), batch: id) }
        _ = log.reveal()
        log.publish(through: 5)
        log.wake()
        #expect(woken.withLock { $0 } == 3 && log.droppedStreams == 0)
        #expect(log.close())
        #expect(log.waitForEvents(after: 5) { Issue.record("closed") } == nil, "a closed log has nothing to wait for")
    }

    @Test(
        "the admin stream's valueChanged, kept as its parts, reads as its record; its held bytes bound its text and its tree"
    )
    func deferredValueChanged() throws {
        let store = Store()
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0, "m": ["deep": 1]])
        let values: [(String, JSON)] = [
            ("n", ["name": "name-1", "seq": 1, "tags": ["x", "y"], "none": nil, "flag": true, "ratio": 0.5]),
            ("m.deep", "a \"quoted\" line\n"),
            ("n", 12_345_678_901),
            ("n", .array(Array(repeating: ["a": .array([])], count: 100))),
        ]
        for (offset, (keyPath, value)) in values.enumerated() {
            let by: String? = offset == 1 ? nil : "tab-\(offset)"
            _ = try store.execute(
                Command(
                    time: Timestamp(milliseconds: 1_000),
                    .setValue(object: "a", keyPath: keyPath, value: value, ifRevision: nil), as: .admin, by: by))
        }
        guard case .events(let events) = try store.eventLog(of: nil).read(after: 0) else {
            Issue.record("the admin log holds the writes' events")
            return
        }
        let changes = events.filter { $0.name == "valueChanged" }
        #expect(changes.count == values.count)
        for (offset, event) in changes.enumerated() {
            let record = try JSONParser.parse(event.data)
            #expect(record["object"] == "a")
            #expect(record["keyPath"] == .string(values[offset].0))
            #expect(record["value"] == values[offset].1)
            #expect(record["revision"] == .int(event.revision))
            #expect(record["by"] == (offset == 1 ? nil : .string("tab-\(offset)")))
            #expect(event.materialized.data == event.data, "encoded the same however it is read")
            // What the record keeps alive is the parsed value: a 24-byte slot per node at least.
            let estimate = event.footprint - Event.overheadBytes
            #expect(estimate >= event.data.count - 8, "text: \(estimate) for \(event.data.count) bytes")
            #expect(estimate >= 24 * nodes(values[offset].1), "tree: \(estimate) for \(nodes(values[offset].1)) nodes")
        }
    }

    func nodes(_ value: JSON) -> Int {
        switch value {
        case .array(let elements): 1 + elements.reduce(0) { $0 + nodes($1) }
        case .object(let members): 1 + members.reduce(0) { $0 + 1 + nodes($1.value) }
        default: 1
        }
    }
}
