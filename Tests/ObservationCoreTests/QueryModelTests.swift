import Testing

@testable import ObservationCore

/// Section 12 against a model: seeded random writes, deletions and reference changes over a
/// few dozen objects; every query record applied to a client's copy of the window (as the
/// contract says: removals highest first, then insertions lowest first, then updates) must
/// give exactly what `POST /v1/query` answers after each revision: the ids, the selected
/// values and `total`.
@Suite("Queries: records applied to a client's copy always give the window")
struct QueryModelTests {
    static let definitions: [JSON] = [
        [
            "class": "Order", "where": [["status", "==", "open"]], "orderBy": [["total", "desc"], ["group", "asc"]],
            "limit": 5, "select": ["total", "customer.country"],
        ],
        [
            "class": "Order", "where": [["customer.country", "in", ["FR", "DE"]], ["total", ">=", 20]],
            "orderBy": [["customer.name", "asc"], ["total", "asc"]], "limit": 4, "select": ["status"],
        ],
        // Direct shapes (stored scalar keys of a class): the window alone, refilled from the class's
        // ids or from an order index.
        ["class": "Order", "where": [["group", "prefix", "g1"]], "limit": 7, "select": ["rank"]],
        [
            "class": "Order", "where": [["status", "==", "open"]], "orderBy": [["rank", "desc"], ["group", "asc"]],
            "limit": 3, "select": ["rank", "status"],
        ],
        ["class": "Order", "where": [["rank", "<", 50]], "orderBy": [["status", "desc"]], "limit": 3],
        ["class": "Order", "orderBy": [["rank", "asc"]], "limit": 2, "select": ["group"]],
        [
            "where": [["total", "exists", true]], "orderBy": [["total", "asc"]], "limit": 6,
            "select": ["status", "total"],
        ],
        ["class": "Order", "where": [["total", "<", 50]], "orderBy": [["status", "desc"]], "limit": 3],
        [
            "where": [["status", "in", ["open", "held"]]], "orderBy": [["group", "desc"]], "limit": 4,
            "select": ["total"],
        ],
    ]

    @Test("random writes, deletions and repointed references", arguments: [1, 2, 3, 42])
    func model(seed: UInt64) throws {
        var world = try World(seed: seed)
        for _ in 0..<400 {
            world.step()
            try world.check()
        }
        #expect(world.recordsApplied > 200, "only \(world.recordsApplied) records")
    }

    /// Section 13: the observer's token reads some orders and two customers; the others are
    /// never members, and references to them read as `null` in conditions, order and select.
    @Test("the same for an observer made by a scoped token", arguments: [5, 6])
    func scopedModel(seed: UInt64) throws {
        var world = try World(seed: seed, scopes: Self.scopes)
        for _ in 0..<400 {
            world.step()
            try world.check()
        }
        #expect(world.recordsApplied > 100, "only \(world.recordsApplied) records")
    }

    @Test("the same definition registered twice by one observer is deduplicated, by two is shared")
    func sharing() throws {
        let store = Store()
        _ = try store.as(.admin).defineClass("Order", definition: ["properties": ["total": ["type": "number"]]])
        for index in 0..<5 {
            _ = try store.as(.admin).createObject(id: "o\(index)", className: "Order", values: ["total": .int(index)])
        }
        let a = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        let b = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        let definition: JSON = ["class": "Order", "orderBy": [["total", "desc"]], "limit": 2, "select": ["total"]]
        let first = try store.as(.admin).registerQuery(observerID: a, definition: definition, options: ["new"])
        let again = try store.as(.admin).registerQuery(observerID: a, definition: definition, options: ["new"])
        #expect(!first.deduplicated && again.deduplicated && again.query.id == first.query.id && again.revision == nil)
        let other = try store.as(.admin).registerQuery(observerID: b, definition: definition, options: ["new"])
        #expect(!other.deduplicated && other.query.id != first.query.id)
        #expect(store.state.withLock { $0.queries.shapes.count } == 1, "two observers, one evaluation")
        _ = try store.as(.admin).setValue(.int(9), of: "o0", at: "total")
        let records = try [a, b].map { id in try queryRecords(store.eventLog(of: id)) }
        // The same record but for the query id.
        #expect(records[0].count == 1 && records[1].count == 1)
        #expect(
            records[0][0].replacingOccurrences(of: first.query.id, with: "Q")
                == records[1][0].replacingOccurrences(of: other.query.id, with: "Q"))
        _ = try store.as(.admin).unregisterQuery(observerID: a, queryID: first.query.id)
        _ = try store.as(.admin).deleteObserver(b)
        #expect(store.state.withLock { $0.queries.shapes.count } == 0, "the last query takes its evaluation along")
    }

    @Test("replacing a class evaluates its queries again: a computed key's new meaning moves members")
    func classReplaced() throws {
        let store = Store()
        let computed: (String) -> JSON = { template in
            ["properties": ["name": ["type": "string"], "label": ["type": "string", "computed": .string(template)]]]
        }
        _ = try store.as(.admin).defineClass("Tag", definition: computed("{name}"))
        for name in ["Ann", "Bob", "Amy"] {
            _ = try store.as(.admin).createObject(id: name, className: "Tag", values: ["name": .string(name)])
        }
        let observer = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        let query = try store.as(.admin).registerQuery(
            observerID: observer,
            definition: ["class": "Tag", "where": [["label", "prefix", "A"]], "select": ["label"]],
            options: ["new"])
        #expect(try store.as(.admin).query(query.query.id, of: observer).ids == ["Amy", "Ann"])
        _ = try store.as(.admin).defineClass("Tag", definition: computed("x{name}"))
        #expect(try store.as(.admin).query(query.query.id, of: observer).ids == [], "no label starts with A any more")
        _ = try store.as(.admin).defineClass("Tag", definition: computed("{name}"))
        _ = try store.as(.admin).setValue("Al", of: "Bob", at: "name")
        #expect(try store.as(.admin).query(query.query.id, of: observer).ids == ["Amy", "Ann", "Bob"])
        let records = queryRecords(try store.eventLog(of: observer))
        #expect(records.count == 3, "\(records)")
        // Without a class, an entry on a key some class computes is found by every write of its inputs.
        let anyClass = try store.as(.admin).registerQuery(
            observerID: observer, definition: ["where": [["label", "==", "Al"]], "select": ["name"]], options: ["new"])
        #expect(try store.as(.admin).query(anyClass.query.id, of: observer).ids == ["Bob"])
        _ = try store.as(.admin).setValue("Al", of: "Amy", at: "name")
        _ = try store.as(.admin).createObject(id: "Cy", className: "Tag", values: ["name": "Al"])
        _ = try store.as(.admin).createObject(id: "Dee", className: nil, values: ["label": "Al"])
        #expect(try store.as(.admin).query(anyClass.query.id, of: observer).ids == ["Amy", "Bob", "Cy", "Dee"])
    }

    @Test("one record per query per revision: an observer's removal releasing several retained objects")
    func oneRecordPerRevision() throws {
        let store = Store()
        for id in ["a", "b", "c"] { _ = try store.as(.admin).createObject(id: id, className: nil, values: ["n": 1]) }
        let keeper = try store.as(.admin).createObserver(ObserverSettings(retainObserved: true)).observer.id
        for id in ["a", "b"] {
            _ = try store.as(.admin).observe(
                observerID: keeper, objectID: id, keyPaths: ["n"], options: [], context: nil)
        }
        let watcher = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).registerQuery(
            observerID: watcher, definition: ["where": [["n", "==", 1]]], options: ["old"])
        for id in ["a", "b"] { _ = try store.as(.admin).deleteObject(id) }  // releasePending: still members
        #expect(queryRecords(try store.eventLog(of: watcher)).isEmpty)
        _ = try store.as(.admin).deleteObserver(keeper)
        let records = queryRecords(try store.eventLog(of: watcher))
        #expect(records.count == 1, "\(records)")
        #expect(records.first?.contains(#""removed":[{"index":0,"id":"a"},{"index":1,"id":"b"}]"#) == true)
    }

    @Test("bad definitions are refused with the contract's error and register nothing")
    func refusals() throws {
        let store = Store()
        _ = try store.as(.admin).defineClass(
            "Order", definition: ["properties": ["total": ["type": "number"], "tag": ["type": "string"]]])
        let observer = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        let cases: [(JSON, [String], CoreError.Code)] = [
            (["class": "Nope"], [], .notFound),
            (["class": "Order", "where": [["totl", "==", 1]]], [], .unknownKeyPath),
            (["class": "Order", "where": [["total", "~", 1]]], [], .invalidRequest),
            (["class": "Order", "where": [["total", ">", "x"]]], [], .typeMismatch),
            (["class": "Order", "where": [["tag", "prefix", 3]]], [], .invalidRequest),
            (["class": "Order", "where": [["total", "in", []]]], [], .invalidRequest),
            (["class": "Order", "where": [["total", "in", .array((0...100).map(JSON.int))]]], [], .invalidRequest),
            (["class": "Order", "where": .array((0...16).map { _ in ["total", "==", 1] })], [], .invalidRequest),
            (["class": "Order", "where": [["total", "exists", 1]]], [], .invalidRequest),
            (["class": "Order", "where": [["total", "=="]]], [], .invalidRequest),
            (["class": "Order", "orderBy": [["total", "up"]]], [], .invalidRequest),
            (["class": "Order", "orderBy": [["total"], ["tag"], ["total"], ["tag"]]], [], .invalidRequest),
            (["class": "Order", "limit": 0], [], .invalidRequest),
            (["class": "Order", "limit": 10_001], [], .invalidRequest),
            (["class": "Order", "select": ["a.@count.b"]], [], .invalidKeyPath),
            (["class": "Order"], ["prior"], .invalidRequest),
            (["class": "Order"], ["skipOwn"], .invalidRequest),
            (["class": "Order", "colour": "red"], [], .invalidRequest),
        ]
        let before = store.stats().revision
        for (definition, options, code) in cases {
            #expect(throws: CoreError.self) {
                try store.as(.admin).registerQuery(observerID: observer, definition: definition, options: options)
            }
            do {
                _ = try store.as(.admin).registerQuery(observerID: observer, definition: definition, options: options)
            } catch {
                #expect(error.code == code, "\(definition) \(options): \(error.code) \(error.message)")
            }
        }
        #expect(store.stats().revision == before, "a refused query takes no revision")
        #expect(try store.as(.admin).queries(of: observer).isEmpty)
    }

    @Test("--max-queries over all observers, and a query counts toward the observer's registrations")
    func limits() throws {
        let store = Store(limits: StoreLimits(maxRegistrationsPerObserver: 3, maxQueries: 2))
        let a = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        let b = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        _ = try store.as(.admin).registerQuery(observerID: a, definition: ["limit": 1])
        _ = try store.as(.admin).registerQuery(observerID: a, definition: ["limit": 2])
        #expect(throws: CoreError(.limitExceeded, "the server holds its limit of 2 queries", details: ["limit": 2])) {
            try store.as(.admin).registerQuery(observerID: b, definition: ["limit": 3])
        }
        #expect(
            try store.as(.admin).registerQuery(observerID: a, definition: ["limit": 1]).deduplicated,
            "dedup at the limit: 200")
        _ = try store.as(.admin).createObject(id: "x", className: nil, values: [:])
        _ = try store.as(.admin).observe(observerID: a, objectID: "x", keyPaths: ["v"], options: [], context: nil)
        #expect(throws: CoreError.self) {
            try store.as(.admin).observe(observerID: a, objectID: "x", keyPaths: ["w"], options: [], context: nil)
        }
    }
}

extension QueryModelTests {
    static let scopes: JSON = [
        ["allow": ["read", "observe"], "class": "Order", "ids": "o1*"],
        ["allow": ["read"], "class": "Customer", "ids": "c1"], ["allow": ["read"], "ids": "c3"],
    ]
}

/// The records of `query` events in a log, as text.
func queryRecords(_ log: EventLog) -> [String] {
    guard case .events(let events) = log.read(after: 0, limit: 100_000) else { return [] }
    return events.filter { $0.name == "query" }.map { String(decoding: $0.data, as: UTF8.self) }
}

/// The store, the random writer, and each query's window as a client rebuilt it from records.
private struct World {
    var random: SeededGenerator
    let store = Store()
    let observer: String
    let log: EventLog
    /// What the observer's token may read (nil: the admin made it).
    let reader: ReadFilter?
    var cursor = 0
    var queries: [(id: String, definition: JSON)] = []
    var windows: [String: (members: [(id: String, values: JSONObject)], total: Int)] = [:]
    var orders: [String] = []
    var serial = 0
    var recordsApplied = 0
    let customers = ["c0", "c1", "c2", "c3", "c4", "c5"]

    init(seed: UInt64, scopes: JSON? = nil) throws {
        random = SeededGenerator(seed: seed)
        _ = try store.as(.admin).defineClass(
            "Customer", definition: ["properties": ["name": ["type": "string"], "country": ["type": "string"]]])
        _ = try store.as(.admin).defineClass(
            "Order",
            definition: [
                "properties": [
                    "status": ["type": "string"], "total": ["type": "any"], "group": ["type": "string"],
                    "rank": ["type": "integer"],
                    "customer": ["type": "ref", "class": "Customer"],
                ]
            ])
        for id in customers {
            _ = try store.as(.admin).createObject(id: id, className: "Customer", values: Self.customer(&random))
        }
        if let scopes {
            let token = try store.as(.admin).createToken(scopes: scopes, secret: "model-secret")
            let made = try store.execute(
                Command(
                    time: .now(),
                    .createObserver(
                        id: "obs_model", tokenHash: "h", name: nil, lease: 600, retainObserved: false, replay: 100_000),
                    as: .token(token.id)))
            guard case .observerCreated(let snapshot) = made else { throw CoreError(.conflict, "no observer") }
            observer = snapshot.id
            reader = store.state.withLock { $0.observers[snapshot.id]?.reader }
        } else {
            observer = try store.as(.admin).createObserver(ObserverSettings(replay: 100_000)).observer.id
            reader = nil
        }
        log = try store.eventLog(of: observer)
        for _ in 0..<30 { try createOrder() }
        for definition in QueryModelTests.definitions {
            let result = try store.as(.admin).registerQuery(
                observerID: observer, definition: definition, options: ["initial", "new", "old"])
            queries.append((result.query.id, definition))
        }
        let direct = store.state.withLock { $0.queries.shapes.values.filter { $0.traced == nil }.count }
        #expect(direct == 4, "the direct shapes are kept without their members")
        if scopes != nil {
            #expect(store.state.withLock { $0.queries.shapes.values.allSatisfy { $0.definition.filter != nil } })
        }
        try check()
    }

    static func customer(_ random: inout SeededGenerator) -> JSONObject {
        [
            "name": .string(["Ada", "Bo", "Cy", "Di"].randomElement(using: &random)!),
            "country": .string(["FR", "DE", "UK"].randomElement(using: &random)!),
        ]
    }

    mutating func createOrder() throws {
        serial += 1
        let id = "o\(serial)"
        _ = try store.as(.admin).createObject(id: id, className: "Order", values: orderValues())
        orders.append(id)
    }

    mutating func orderValues() -> JSONObject {
        [
            "status": .string(["open", "closed"].randomElement(using: &random)!),
            "total": total(), "group": .string(["g1", "g10", "g2"].randomElement(using: &random)!),
            "rank": Bool.random(using: &random) ? .int(Int.random(in: 0..<100, using: &random)) : .null,
            "customer": .reference(customers.randomElement(using: &random)!),
        ]
    }

    mutating func total() -> JSON {
        switch Int.random(in: 0..<10, using: &random) {
        case 0: .null
        case 1: .string("n/a")
        case 2: .double(Double(Int.random(in: 0..<100, using: &random)) + 0.5)
        default: .int(Int.random(in: 0..<100, using: &random))
        }
    }

    /// One random write; refused writes (a deleted object) are fine: they change nothing.
    mutating func step() {
        let order = orders.randomElement(using: &random) ?? "o1"
        let customer = customers.randomElement(using: &random)!
        switch Int.random(in: 0..<14, using: &random) {
        case 12, 13:
            _ = try? store.as(.admin).setValue(.int(Int.random(in: 0..<100, using: &random)), of: order, at: "rank")
        case 0, 1: _ = try? store.as(.admin).setValue(total(), of: order, at: "total")
        case 2:
            _ = try? store.as(.admin).setValue(
                .string(["open", "closed"].randomElement(using: &random)!), of: order, at: "status")
        case 3:
            _ = try? store.as(.admin).setValue(
                .string(["g1", "g10", "g2", "g11"].randomElement(using: &random)!), of: order, at: "group")
        case 4: _ = try? store.as(.admin).setValue(.reference(customer), of: order, at: "customer")
        case 5:
            _ = try? store.as(.admin).setValue(
                .string(["FR", "DE", "UK"].randomElement(using: &random)!), of: customer, at: "country")
        case 6:
            _ = try? store.as(.admin).setValue(
                .string(["Ada", "Bo", "Cy", "Di"].randomElement(using: &random)!), of: customer, at: "name")
        case 7: _ = try? store.as(.admin).patch(order, values: orderValues())
        case 8:
            _ = try? store.as(.admin).deleteObject(order)
            orders.removeAll { $0 == order }
        case 9: try? createOrder()
        case 10:
            // A customer goes, or comes back: references to it read as null, then as it again.
            if (try? store.as(.admin).object(customer)) != nil {
                _ = try? store.as(.admin).deleteObject(customer)
            } else {
                _ = try? store.as(.admin).createObject(
                    id: customer, className: "Customer", values: Self.customer(&random))
            }
        default: _ = try? store.as(.admin).setValue(.string("UK"), of: order, at: "customer.country")
        }
    }

    /// Applies the new records, then compares every window with the store's answer.
    mutating func check() throws {
        if case .events(let events) = log.read(after: cursor, limit: 100_000) {
            for event in events {
                cursor = event.id
                guard event.name == "query" else { continue }
                try apply(event.data)
            }
        }
        for (id, definition) in queries {
            // Evaluated from scratch: the oracle for the shared, incrementally kept window.
            let answer = try store.state.withLock { [reader] state throws(CoreError) in
                try state.answerQuery(definition, filter: reader, fresh: true)
            }
            let window = windows[id]!
            #expect(window.members.map(\.id) == answer.objects.map(\.id), "query \(id) ids")
            #expect(window.members.map(\.values) == answer.objects.map(\.values), "query \(id) values")
            #expect(window.total == answer.total, "query \(id) total")
            #expect(try store.as(.admin).query(id, of: observer).ids == answer.objects.map(\.id))
        }
    }

    mutating func apply(_ data: [UInt8]) throws {
        guard case .object(let record) = try JSONParser.parse(data), case .string(let id)? = record["query"],
            case .int(let total)? = record["total"], case .array(let removed)? = record["removed"],
            case .array(let inserted)? = record["inserted"], case .array(let updated)? = record["updated"]
        else { throw ModelFailure("unreadable record \(String(decoding: data, as: UTF8.self))") }
        recordsApplied += 1
        var members = record["initial"] == .bool(true) ? [] : windows[id]?.members ?? []
        let removedIDs = Set(
            removed.compactMap { if case .object(let m) = $0, case .string(let id)? = m["id"] { id } else { nil } })
        for entry in removed.reversed() {
            guard case .object(let member) = entry, case .int(let index)? = member["index"],
                case .string(let objectID)? = member["id"], index < members.count, members[index].id == objectID
            else { throw ModelFailure("removal \(entry) does not match the window \(members.map(\.id))") }
            members.remove(at: index)
        }
        for entry in inserted {
            guard case .object(let member) = entry, case .int(let index)? = member["index"],
                case .string(let objectID)? = member["id"], index <= members.count
            else { throw ModelFailure("insertion \(entry) does not fit the window \(members.map(\.id))") }
            if member["moved"] == .bool(true) {
                #expect(removedIDs.contains(objectID), "a move is a removal and an insertion")
            }
            // Without `select`, members carry no values.
            let values: JSONObject = if case .object(let values)? = member["new"] { values } else { [:] }
            members.insert((objectID, values), at: index)
        }
        for entry in updated {
            guard case .object(let member) = entry, case .int(let index)? = member["index"],
                case .string(let objectID)? = member["id"], index < members.count, members[index].id == objectID,
                case .object(let values)? = member["new"]
            else { throw ModelFailure("update \(entry) does not match the window \(members.map(\.id))") }
            for (key, value) in values { members[index].values[key] = value }
        }
        windows[id] = (members, total)
    }
}

struct ModelFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
