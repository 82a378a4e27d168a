import ObservationCore
import Testing

/// A store with one observer, and a reader of that observer's events.
struct ObservationFixture {
    let store = Store()
    let observerID: String
    let log: EventLog
    private var cursor = 0

    init(retain: Bool = false) throws {
        observerID = try store.as(.admin).createObserver(ObserverSettings(retainObserved: retain)).observer.id
        log = try store.openStream(of: observerID)
        store.closeStream(of: observerID)
    }

    /// Events since the last call, as (name, data).
    mutating func events() -> [(String, JSON)] {
        guard case .events(let events) = log.read(after: cursor, limit: 10_000) else { return [] }
        cursor = events.last?.id ?? cursor
        return events.map { ($0.name, (try? JSONParser.parse($0.data)) ?? .null) }
    }

    /// Data of `change` events since the last call.
    mutating func changes() -> [JSON] { events().filter { $0.0 == "change" }.map(\.1) }

    @discardableResult
    func observe(
        _ object: String, _ keyPath: String, _ options: ObservationOptions = [.new, .old], context: JSON? = nil
    )
        throws -> ObserveResult
    {
        try store.as(.admin).observe(
            observerID: observerID, objectID: object, keyPaths: [keyPath], options: options, context: context)
    }
}

extension JSON {
    subscript(_ key: String) -> JSON? {
        guard case .object(let members) = self else { return nil }
        return members[key]
    }
}

@Suite("Observation: change records")
struct ObservationTests {
    @Test(
        "options decide which fields a record carries",
        arguments: [
            (ObservationOptions(), [String]()), (.new, ["new"]), (.old, ["old"]), ([.new, .old], ["old", "new"]),
        ] as [(ObservationOptions, [String])])
    func optionFields(options: ObservationOptions, fields: [String]) throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: ["balance": 100])
        try fixture.observe("a", "balance", options, context: ["tag": 1])
        let revision = try fixture.store.as(.admin).setValue(120, of: "a", at: "balance")
        let records = fixture.changes()
        try #require(records.count == 1)
        let record = records[0]
        #expect(record["kind"] == "setting")
        #expect(record["object"] == "a")
        #expect(record["keyPath"] == "balance")
        #expect(record["revision"] == .int(revision))
        #expect(record["context"] == ["tag": 1])
        #expect((record["old"] != nil) == fields.contains("old"))
        #expect((record["new"] != nil) == fields.contains("new"))
        if fields.contains("old") { #expect(record["old"] == 100) }
        if fields.contains("new") { #expect(record["new"] == 120) }
        #expect(record["prior"] == nil && record["initial"] == nil)
    }

    @Test("initial sends the current value at once, never old")
    func initial() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: ["n": 5])
        try fixture.observe("a", "n", [.initial, .new, .old])
        let records = fixture.changes()
        #expect(records.count == 1)
        #expect(records.first?["initial"] == true)
        #expect(records.first?["new"] == 5)
        #expect(records.first?["old"] == nil)
        try fixture.observe("a", "m", [.initial])
        #expect(fixture.changes().first?["new"] == nil)
    }

    @Test("a PATCH sends every prior record first, then every post record, under one revision")
    func nesting() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: ["x": 1, "y": 2])
        try fixture.observe("a", "x", [.prior, .old, .new])
        try fixture.observe("a", "y", [.prior, .old, .new])
        let revision = try fixture.store.as(.admin).patch("a", values: ["x": 10, "y": 20])
        let records = fixture.changes()
        #expect(records.map { $0["prior"] == true } == [true, true, false, false])
        #expect(records.allSatisfy { $0["revision"] == .int(revision) })
        #expect(records[0]["old"] == 1 && records[0]["new"] == nil)
        #expect(records[3]["old"] == 2 && records[3]["new"] == 20)
    }

    @Test("notify policies: always, onChange, manual with notify")
    func policies() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).defineClass(
            "A",
            definition: [
                "properties": [
                    "always": ["type": "number"], "changes": ["type": "number", "notify": "onChange"],
                    "manual": ["type": "number", "notify": "manual"],
                ]
            ])
        _ = try fixture.store.as(.admin).createObject(
            id: "a", className: "A", values: ["always": 1, "changes": 1, "manual": 1])
        for key in ["always", "changes", "manual"] { try fixture.observe("a", key) }
        _ = try fixture.store.as(.admin).patch("a", values: ["always": 1, "changes": 1, "manual": 2])
        #expect(fixture.changes().map { $0["keyPath"] } == ["always"])
        _ = try fixture.store.as(.admin).patch("a", values: ["changes": 2, "manual": 3])
        #expect(fixture.changes().map { $0["keyPath"] } == ["changes"])
        _ = try fixture.store.as(.admin).notify("a", keyPaths: ["manual"])
        let manual = fixture.changes()
        #expect(manual.count == 1)
        #expect(manual.first?["old"] == 1)
        #expect(manual.first?["new"] == 3)
    }

    @Test("a notify tells each registration the change since its own last record, however many share the key")
    func manualOldPerRegistration() throws {
        let store = Store()
        let admin = store.as(.admin)
        _ = try admin.defineClass("M", definition: ["properties": ["m": ["type": "number", "notify": "manual"]]])
        _ = try admin.createObject(id: "a", className: "M", values: ["m": 1])
        func observer() throws -> EventLog {
            let id = try admin.createObserver(ObserverSettings()).observer.id
            _ = try admin.observe(observerID: id, objectID: "a", keyPaths: ["m"], options: [.old, .new], context: nil)
            return try store.openStream(of: id)
        }
        let early = try observer()
        _ = try admin.setValue(2, of: "a", at: "m")
        let late = try observer()
        _ = try admin.setValue(3, of: "a", at: "m")
        _ = try admin.notify("a", keyPaths: ["m"])
        #expect(changeRecords(early).map { [$0["old"], $0["new"]] } == [[1, 3]])
        #expect(changeRecords(late).map { [$0["old"], $0["new"]] } == [[2, 3]], "its own last value, not the other's")
    }

    @Test("a record writes its own values as they are spelled, though another's in the same change are equal")
    func recordsKeepTheirSpelling() throws {
        let store = Store()
        let admin = store.as(.admin)
        let values: JSONObject = ["x": 1, "y": 1.0, "p": ["a": 1, "b": 2], "r": ["b": 2, "a": 1]]
        _ = try admin.createObject(id: "o", className: nil, values: values)
        var logs: [String: EventLog] = [:]
        for key in ["x", "y", "p", "r"] {
            let id = try admin.createObserver(ObserverSettings()).observer.id
            _ = try admin.observe(observerID: id, objectID: "o", keyPaths: [key], options: [.old, .new], context: nil)
            logs[key] = try store.openStream(of: id)
        }
        _ = try admin.patch("o", values: ["x": 2, "y": 2, "p": 0, "r": 0])  // one change: tails shared where alike
        func text(_ key: String) -> String {
            guard case .events(let events)? = logs[key]?.read(after: 0, limit: 10) else { return "" }
            return events.map { String(decoding: $0.data, as: UTF8.self) }.joined(separator: "\n")
        }
        #expect(text("x").contains("\"old\":1,"), "\(text("x"))")
        #expect(text("y").contains("\"old\":1.0,"), "\(text("y"))")
        #expect(text("p").contains("\"old\":{\"a\":1,\"b\":2}"), "\(text("p"))")
        #expect(text("r").contains("\"old\":{\"b\":2,\"a\":1}"), "\(text("r"))")
    }

    @Test("a one-key registration tells every change as its value goes from plain to a reference and back")
    func oneKeyThroughKinds() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "p1", className: nil, values: ["name": "Ada"])
        _ = try fixture.store.as(.admin).createObject(id: "acct", className: nil, values: ["owner": "nobody"])
        try fixture.observe("acct", "owner")
        _ = try fixture.store.as(.admin).setValue("somebody", of: "acct", at: "owner")
        _ = try fixture.store.as(.admin).setValue(["$ref": "p1"], of: "acct", at: "owner")
        _ = try fixture.store.as(.admin).deleteObject("p1")
        _ = try fixture.store.as(.admin).setValue("plain again", of: "acct", at: "owner")
        _ = try fixture.store.as(.admin).setValue("and again", of: "acct", at: "owner")
        let records = fixture.changes()
        #expect(records.map { $0["old"] } == ["nobody", "somebody", ["$ref": "p1"], .null, "plain again"])
        #expect(records.map { $0["new"] } == ["somebody", ["$ref": "p1"], .null, "plain again", "and again"])
    }

    @Test("a path through a reference re-binds when a link changes")
    func rebinding() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "p1", className: nil, values: ["name": "Ada"])
        _ = try fixture.store.as(.admin).createObject(id: "p2", className: nil, values: ["name": "Alan"])
        _ = try fixture.store.as(.admin).createObject(id: "acct", className: nil, values: ["owner": ["$ref": "p1"]])
        try fixture.observe("acct", "owner.name")
        _ = try fixture.store.as(.admin).setValue("Ada L.", of: "p1", at: "name")
        #expect(fixture.changes().map { $0["new"] } == ["Ada L."])
        _ = try fixture.store.as(.admin).setValue(["$ref": "p2"], of: "acct", at: "owner")
        let switched = fixture.changes()
        #expect(switched.count == 1)
        #expect(switched.first?["old"] == "Ada L." && switched.first?["new"] == "Alan")
        _ = try fixture.store.as(.admin).setValue("nobody sees this", of: "p1", at: "name")
        #expect(fixture.changes().isEmpty)
        _ = try fixture.store.as(.admin).setValue("Alan T.", of: "p2", at: "name")
        #expect(fixture.changes().map { $0["new"] } == ["Alan T."])
    }

    @Test("computed key paths with operators notify through references and arrays")
    func computed() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).defineClass("E", definition: ["properties": ["salary": ["type": "number"]]])
        _ = try fixture.store.as(.admin).defineClass(
            "D",
            definition: [
                "properties": [
                    "employees": ["type": "array", "items": ["type": "ref", "class": "E"]],
                    "total": ["type": "number", "computed": "employees.@sum.salary", "notify": "onChange"],
                ]
            ])
        _ = try fixture.store.as(.admin).createObject(id: "e1", className: "E", values: ["salary": 10])
        _ = try fixture.store.as(.admin).createObject(id: "e2", className: "E", values: ["salary": 20])
        _ = try fixture.store.as(.admin).createObject(id: "d", className: "D", values: ["employees": [["$ref": "e1"]]])
        try fixture.observe("d", "total")
        _ = try fixture.store.as(.admin).setValue(15, of: "e1", at: "salary")
        #expect(fixture.changes().map { $0["new"] } == [15])
        _ = try fixture.store.as(.admin).setValue(99, of: "e2", at: "salary")
        #expect(fixture.changes().isEmpty, "e2 is not an employee yet")
        let insertion = try ArrayMutation(kind: .insertion, indexes: [1], values: [["$ref": "e2"]])
        _ = try fixture.store.as(.admin).mutate("d", at: "employees", insertion)
        #expect(fixture.changes().map { $0["new"] } == [114])
        _ = try fixture.store.as(.admin).setValue(15, of: "e1", at: "salary")
        #expect(fixture.changes().isEmpty, "onChange: an equal total notifies nobody")
    }

    @Test(
        "to-many mutations report their kind, indexes and only the affected elements",
        arguments: [
            (.insertion, [0, 3], ["a", "b"], nil, ["a", "b"]),
            (.removal, [1], [], [2], nil),
            (.replacement, [0, 2], ["x", "z"], [1, 3], ["x", "z"]),
        ] as [(ArrayMutation.Kind, [Int], [JSON], JSON?, JSON?)])
    func toMany(kind: ArrayMutation.Kind, indexes: [Int], values: [JSON], old: JSON?, new: JSON?) throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: ["list": [1, 2, 3]])
        try fixture.observe("a", "list", [.old, .new, .prior])
        _ = try fixture.store.as(.admin).mutate(
            "a", at: "list", try ArrayMutation(kind: kind, indexes: indexes, values: values))
        let records = fixture.changes()
        try #require(records.count == 2)
        #expect(records[0]["prior"] == true && records[0]["new"] == nil)
        #expect(records[1]["kind"] == .string(kind.rawValue))
        #expect(records[1]["indexes"] == .array(indexes.map(JSON.int)))
        #expect(records[1]["old"] == old)
        #expect(records[1]["new"] == new)
    }

    @Test("registrations are deduplicated per (object, key path): first wins")
    func dedup() throws {
        let fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: [:])
        let first = try fixture.observe("a", "x", [.new])
        let second = try fixture.observe("a", "x", [.old], context: "other")
        #expect(first.revision != nil && second.revision == nil)
        #expect(second.registrations.first?.deduplicated == true)
        #expect(second.registrations.first?.registration == first.registrations.first?.registration)
        #expect(try fixture.store.as(.admin).observer(fixture.observerID).registrations.count == 1)
    }

    @Test("unobserving is a fence; removing what is not registered is 404")
    func fence() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: [:])
        let id = try #require(try fixture.observe("a", "x").registrations.first?.registration.id)
        _ = try fixture.store.as(.admin).unobserve(observerID: fixture.observerID, registrationID: id)
        #expect(fixture.events().map(\.0) == ["cancelled"])
        _ = try fixture.store.as(.admin).setValue(1, of: "a", at: "x")
        #expect(fixture.events().isEmpty)
        #expect(
            errorCode { _ = try fixture.store.as(.admin).unobserve(observerID: fixture.observerID, registrationID: id) }
                == .notFound)
        #expect(try fixture.store.as(.admin).unobserve(observerID: fixture.observerID) == nil)
    }

    @Test("deleting an object cancels its registrations; paths through it read null")
    func deletion() throws {
        var fixture = try ObservationFixture()
        _ = try fixture.store.as(.admin).createObject(id: "p", className: nil, values: ["name": "Ada"])
        _ = try fixture.store.as(.admin).createObject(id: "acct", className: nil, values: ["owner": ["$ref": "p"]])
        try fixture.observe("p", "name")
        try fixture.observe("acct", "owner.name")
        #expect(try fixture.store.as(.admin).deleteObject("p") == .deleted(revision: fixture.store.stats().revision))
        let events = fixture.events()
        #expect(events.map(\.0) == ["cancelled", "change"])
        #expect(events[0].1["reason"] == "objectDeleted")
        #expect(events[1].1["old"] == "Ada" && events[1].1["new"] == JSON.null)
        #expect(
            try fixture.store.as(.admin).observer(fixture.observerID).registrations.map(\.keyPath) == ["owner.name"])
    }

    @Test("retainObserved keeps a deleted object until its last retainer lets go")
    func retain() throws {
        var fixture = try ObservationFixture(retain: true)
        _ = try fixture.store.as(.admin).createObject(id: "a", className: nil, values: ["x": 1])
        try fixture.observe("a", "x")
        guard case .releasePending(let retainedBy, _) = try fixture.store.as(.admin).deleteObject("a") else {
            Issue.record("not pending")
            return
        }
        #expect(retainedBy == [fixture.observerID])
        #expect(try fixture.store.as(.admin).object("a").retainedBy == [fixture.observerID])
        _ = try fixture.store.as(.admin).setValue(2, of: "a", at: "x")
        #expect(fixture.changes().count == 1, "still observable while pending")
        _ = try fixture.store.as(.admin).unobserve(observerID: fixture.observerID, objectID: "a")
        #expect(errorCode { _ = try fixture.store.as(.admin).object("a") } == .notFound)
    }
}
