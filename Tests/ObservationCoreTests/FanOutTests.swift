import ObservationCore
import Testing

/// Many observers of one key: a write reaches exactly the registrations there are when it is
/// applied, however the ones before it found theirs (`RegistrationIndex` remembers the last
/// one-key write's registrations while none is added, removed or re-bound).
@Suite("Fan-out: many observers of one key")
struct FanOutTests {
    @Test("each write reaches the registrations of its moment: added, removed, re-bound by a reference")
    func registrationsOfTheMoment() throws {
        let store = Store()
        let admin = store.as(.admin)
        var observers = try Watchers(count: 12, in: store)
        _ = try admin.createObject(id: "a", className: nil, values: ["n": 0])
        _ = try admin.createObject(id: "b", className: nil, values: ["n": 0])
        _ = try admin.createObject(id: "holder", className: nil, values: ["ref": ["$ref": "a"]])
        for index in 0..<9 {
            _ = try admin.observe(
                observerID: observers[index].id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        }
        // The tenth reads a.n through a reference, until the reference moves to b.
        _ = try admin.observe(
            observerID: observers[9].id, objectID: "holder", keyPaths: ["ref.n"], options: [.new], context: nil)

        func reached(by value: Int) throws -> [Int] {
            _ = try admin.setValue(.int(value), of: "a", at: "n")
            return observers.changedSinceLastLook()
        }

        #expect(try reached(by: 1) == Array(0..<10))
        #expect(try reached(by: 2) == Array(0..<10))  // the same place again: remembered
        _ = try admin.observe(
            observerID: observers[10].id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        #expect(try reached(by: 3) == Array(0..<11))
        _ = try admin.unobserve(observerID: observers[3].id, objectID: "a", keyPath: "n")
        #expect(try reached(by: 4) == [0, 1, 2, 4, 5, 6, 7, 8, 9, 10])
        _ = try admin.setValue(["$ref": "b"], of: "holder", at: "ref")
        _ = try reached(by: 5)  // the re-bound registration's record of the move is not a's
        #expect(try reached(by: 6) == [0, 1, 2, 4, 5, 6, 7, 8, 10])
        _ = try admin.deleteObserver(observers[0].id)
        #expect(try reached(by: 7) == [1, 2, 4, 5, 6, 7, 8, 10])
        _ = try admin.observe(
            observerID: observers[11].id, objectID: "a", keyPaths: ["n"], options: [.new], context: nil)
        #expect(try reached(by: 8) == [1, 2, 4, 5, 6, 7, 8, 10, 11])
    }

    @Test("a write under a key reaches who reads the key or the place written, not beside it; freed places are reused")
    func placesUnderAKey() throws {
        let store = Store()
        let admin = store.as(.admin)
        var observers = try Watchers(count: 5, in: store)
        _ = try admin.createObject(id: "o", className: nil, values: ["m": ["x": 1, "y": 1], "n": 0])
        for (index, keyPath) in ["m.x", "m.y", "m", "n"].enumerated() {
            _ = try admin.observe(
                observerID: observers[index].id, objectID: "o", keyPaths: [keyPath], options: [.new], context: nil)
        }

        func reached(setting value: JSON, at keyPath: String) throws -> [Int] {
            _ = try admin.setValue(value, of: "o", at: keyPath)
            return observers.changedSinceLastLook()
        }

        #expect(try reached(setting: 2, at: "m.x") == [0, 2])
        #expect(try reached(setting: ["x": 3, "y": 3], at: "m") == [0, 1, 2])
        #expect(try reached(setting: 1, at: "n") == [3])
        _ = try admin.unobserve(observerID: observers[0].id, objectID: "o", keyPath: "m.x")
        _ = try admin.observe(
            observerID: observers[4].id, objectID: "o", keyPaths: ["m.y"], options: [.new], context: nil)
        #expect(try reached(setting: 4, at: "m.y") == [1, 2, 4])
        #expect(try reached(setting: 5, at: "m.x") == [2])
    }

    @Test("each record takes its own observer's next event id when observers come and go (their places reused)")
    func observersComeAndGo() throws {
        let store = Store()
        let admin = store.as(.admin)
        _ = try admin.createObject(id: "o", className: nil, values: ["n": 0])
        func observer() throws -> (id: String, log: EventLog) {
            let id = try admin.createObserver(ObserverSettings()).observer.id
            _ = try admin.observe(observerID: id, objectID: "o", keyPaths: ["n"], options: [.new], context: nil)
            return (id, try store.openStream(of: id))
        }
        var observers = try (0..<4).map { _ in try observer() }
        _ = try admin.setValue(1, of: "o", at: "n")
        _ = try admin.deleteObserver(observers[1].id)
        _ = try admin.deleteObserver(observers[2].id)
        observers = [observers[0], observers[3], try observer(), try observer()]
        _ = try admin.setValue(2, of: "o", at: "n")
        _ = try admin.setValue(3, of: "o", at: "n")

        func changes(_ log: EventLog) -> [(id: Int, new: JSON?)] {
            guard case .events(let events) = log.read(after: 0, limit: 100) else { return [] }
            return events.filter { $0.name == "change" }.map { event in
                guard case .object(let record)? = try? JSONParser.parse(event.data) else { return (event.id, nil) }
                return (event.id, record["new"])
            }
        }
        for (index, observer) in observers.enumerated() {
            let seen = changes(observer.log)
            let expected: [JSON] = index < 2 ? [1, 2, 3] : [2, 3]
            #expect(seen.map(\.new) == expected.map { $0 }, "observer \(index)")
            #expect(seen.map(\.id) == Array(1...expected.count), "observer \(index)'s ids are its own, gapless")
        }
    }
}

/// Observers with their streams, and what each was told since the last look.
private struct Watchers {
    private var observers: [(id: String, log: EventLog, cursor: Int)] = []

    init(count: Int, in store: Store) throws {
        for _ in 0..<count {
            let id = try store.as(.admin).createObserver(ObserverSettings()).observer.id
            observers.append((id, try store.openStream(of: id), 0))
        }
    }

    subscript(index: Int) -> (id: String, log: EventLog, cursor: Int) { observers[index] }

    /// The observers (by place) told a change since the last look.
    mutating func changedSinceLastLook() -> [Int] {
        var who: [Int] = []
        for index in observers.indices {
            guard case .events(let events) = observers[index].log.read(after: observers[index].cursor, limit: 100)
            else { continue }
            observers[index].cursor = events.last?.id ?? observers[index].cursor
            if events.contains(where: { $0.name == "change" }) { who.append(index) }
        }
        return who
    }
}
