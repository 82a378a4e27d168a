import Foundation
import Testing

@testable import ObsServer
@testable import ObservationCore

/// Section 12 through HTTP: registration, deduplication, the records and their indexes,
/// moves, refills, `total`, references, deletion, the fence, `POST /v1/query`, limits and
/// the admin events.
@Suite("Queries over HTTP")
struct QueryAPITests {
    static let orders: JSON = [
        "status": ["type": "string"], "total": ["type": "number"], "group": ["type": "string"],
        "customer": ["type": "ref", "class": "Customer"],
    ]

    /// Classes Customer and Order, customers c1 (FR) and c2 (UK), orders o1…o5 with totals 10…50.
    static func populate(_ client: TestClient) throws {
        try client.defineClass("Customer", ["name": ["type": "string"], "country": ["type": "string"]])
        try client.defineClass("Order", orders)
        try client.createObject("c1", className: "Customer", values: ["name": "Ann", "country": "FR"])
        try client.createObject("c2", className: "Customer", values: ["name": "Bob", "country": "UK"])
        for index in 1...5 {
            try client.createObject(
                "o\(index)", className: "Order",
                values: [
                    "status": "open", "total": .int(index * 10), "group": "g1",
                    "customer": .reference(index % 2 == 0 ? "c2" : "c1"),
                ])
        }
    }

    @discardableResult
    static func register(_ client: TestClient, _ observer: String, _ body: JSON, status: Int = 201) throws -> String {
        let response = try client.send("POST", "/v1/observers/\(observer)/queries", json: body)
        #expect(response.status == status, "\(response.text)")
        guard case .object(let query) = response["query"], case .string(let id)? = query["id"] else {
            throw TestClientError("no query: \(response.text)")
        }
        return id
    }

    /// A server with `populate`d classes and objects, an observer with an open stream, and a
    /// query of `definition` registered: `body(server, client, stream, observer, query)`.
    static func withQuery(
        _ definition: JSON, _ body: (TestServer, TestClient, SSEClient, String, String) throws -> Void
    ) throws {
        try withServer { server, client in
            try populate(client)
            let observer = try client.createObserver()
            let stream = try server.stream(observer)
            let query = try register(client, observer, definition)
            try body(server, client, stream, observer, query)
        }
    }

    @Test("registration answers the normalized definition; the same definition and options again is deduplicated")
    func registration() throws {
        try withServer { _, client in
            try Self.populate(client)
            let observer = try client.createObserver()
            let body: JSON = [
                "class": "Order", "where": [["total", ">=", 20]], "orderBy": [["total"]], "limit": 2,
                "select": ["total", "total"], "options": ["new"], "context": ["tag": 1],
            ]
            let response = try client.send("POST", "/v1/observers/\(observer)/queries", json: body)
            #expect(response.status == 201)
            guard case .object(let query) = response["query"], case .string(let id)? = query["id"] else {
                throw TestClientError(response.text)
            }
            #expect(id.hasPrefix("qry_") && query["orderBy"] == [["total", "asc"]] && query["select"] == ["total"])
            #expect(query["class"] == "Order" && query["limit"] == 2 && query["context"] == ["tag": 1])
            #expect(query["createdAt"] != nil && response["revision"] != .null)
            let revision = try currentRevision(client)
            let again = try client.send("POST", "/v1/observers/\(observer)/queries", json: body)
            #expect(again.status == 200 && again["deduplicated"] == true)
            #expect(try currentRevision(client) == revision, "a deduplicated registration takes no revision")
            let otherOptions = try Self.register(
                client, observer,
                [
                    "class": "Order", "where": [["total", ">=", 20]], "orderBy": [["total"]], "limit": 2,
                    "select": ["total"], "options": ["old"],
                ])
            #expect(otherOptions != id, "other options: another query")
            let one = try client.get("/v1/observers/\(observer)/queries/\(id)")
            #expect(one["ids"] == ["o2", "o3"] && one["total"] == 4)
            let list = try client.get("/v1/observers/\(observer)/queries")
            if case .array(let queries) = list["queries"] {
                #expect(queries.count == 2)
            } else {
                Issue.record("\(list.text)")
            }
            let detail = try client.get("/v1/observers/\(observer)")
            if case .array(let queries) = detail["queries"] {
                #expect(queries.count == 2)
            } else {
                Issue.record("\(detail.text)")
            }
            #expect(try client.get("/v1/stats")["queries"] == 2)
            #expect(try client.get("/metrics").text.contains("obs_queries 2"))
            let summary = try client.get("/v1/observers")
            if case .array(let rows) = summary["observers"], case .object(let row)? = rows.first {
                #expect(row["queries"] == 2)
            }
        }
    }

    @Test("records: removals before, insertions after, updates, moves, refills and total-only records")
    func records() throws {
        try Self.withQuery(
            [
                "class": "Order", "where": [["status", "==", "open"]], "orderBy": [["total", "desc"]], "limit": 3,
                "select": ["total"], "options": ["initial", "new", "old"],
            ]
        ) { _, client, stream, observer, id in
            let initial = try #require(try stream.next())
            #expect(initial.name == "query" && initial["initial"] == true && initial["total"] == 5)
            #expect(
                initial["inserted"] == [
                    ["index": 0, "id": "o5", "new": ["total": 50]], ["index": 1, "id": "o4", "new": ["total": 40]],
                    ["index": 2, "id": "o3", "new": ["total": 30]],
                ])
            // o1 jumps to the top: a move in CollectionDifference terms is an insertion only (o1 was outside).
            try client.set("o1", "total", 100)
            let jump = try #require(try stream.next())
            #expect(jump["query"] == .string(id) && jump["total"] == 5)
            #expect(jump["removed"] == [["index": 2, "id": "o3", "old": ["total": 30]]])
            #expect(jump["inserted"] == [["index": 0, "id": "o1", "new": ["total": 100]]])
            // o4 overtakes o5: o1 and o4 keep their place (a longest common subsequence), o5 moves.
            try client.set("o4", "total", 60)
            let swap = try #require(try stream.next())
            #expect(swap["removed"] == [["index": 1, "id": "o5", "moved": true, "old": ["total": 50]]])
            #expect(swap["inserted"] == [["index": 2, "id": "o5", "moved": true, "new": ["total": 50]]])
            // A change in place: updated, with only the selected value that changed.
            try client.set("o5", "total", 55)
            let update = try #require(try stream.next())
            #expect(update["removed"] == [] && update["inserted"] == [])
            #expect(update["updated"] == [["index": 2, "id": "o5", "old": ["total": 50], "new": ["total": 55]]])
            // Outside the window: only the total changes, or nothing does.
            try client.set("o2", "status", "closed")
            let totalOnly = try #require(try stream.next())
            #expect(
                totalOnly["total"] == 4 && totalOnly["removed"] == [] && totalOnly["inserted"] == []
                    && totalOnly["updated"] == [])
            try client.set("o2", "total", 1)
            // A deleted member leaves; the next in order refills the window.
            let deleted = try client.delete("/v1/objects/o1")
            #expect(deleted.status == 204)
            let refill = try #require(try stream.next())
            #expect(refill["total"] == 3, "o2's change made no record: the next one is the deletion's")
            #expect(refill["removed"] == [["index": 0, "id": "o1", "old": ["total": 100]]])
            #expect(refill["inserted"] == [["index": 2, "id": "o3", "new": ["total": 30]]])
            let window = try client.get("/v1/observers/\(observer)/queries/\(id)")
            #expect(window["ids"] == ["o4", "o5", "o3"] && window["total"] == 3)
        }
    }

    @Test("a query record follows the change records of its revision; one record per query per revision")
    func orderWithinRevision() throws {
        try withServer { server, client in
            try Self.populate(client)
            let observer = try client.createObserver()
            try client.observe(observer, "o1", "total")
            try Self.register(client, observer, ["class": "Order", "select": ["total", "status"], "options": ["new"]])
            let stream = try server.stream(observer)
            let response = try client.send(
                "PATCH", "/v1/objects/o1", json: ["values": ["total": 11, "status": "held"]])
            #expect(response.status == 200)
            let events = try stream.events(2)
            #expect(events.map(\.name) == ["change", "query"])
            #expect(events[1]["updated"] == [["index": 0, "id": "o1", "new": ["total": 11, "status": "held"]]])
            #expect(events[0]["revision"] == events[1]["revision"])
        }
    }

    @Test("conditions and order through references follow a changed or repointed reference")
    func throughReferences() throws {
        try Self.withQuery(
            [
                "class": "Order", "where": [["customer.country", "in", ["FR", "DE"]]],
                "orderBy": [["customer.name", "desc"], ["total", "asc"]], "select": ["customer.name"],
                "options": ["initial", "new"],
            ]
        ) { _, client, stream, observer, _ in
            let initial = try #require(try stream.next())
            #expect(initial["total"] == 3, "o1, o3, o5 belong to c1 (FR)")
            try client.set("c2", "country", "DE")  // o2 and o4 enter through their customer
            let entered = try #require(try stream.next())
            #expect(entered["total"] == 5)
            #expect(
                entered["inserted"] == [
                    ["index": 0, "id": "o2", "new": ["customer.name": "Bob"]],
                    ["index": 1, "id": "o4", "new": ["customer.name": "Bob"]],
                ])
            try client.set("o4", "customer", .reference("c1"))  // repointed: o4 moves among c1's orders
            let moved = try #require(try stream.next())
            #expect(moved["removed"] == [["index": 1, "id": "o4", "moved": true]])
            #expect(moved["inserted"] == [["index": 3, "id": "o4", "moved": true, "new": ["customer.name": "Ann"]]])
            #expect(try client.delete("/v1/objects/c1").status == 204)  // a deleted customer reads as null
            let gone = try #require(try stream.next())
            #expect(gone["total"] == 1, "only o2 (c2, DE) is left")
        }
    }

    @Test("removal is a fence: cancelled, then no record; the admin stream tells of queries added and removed")
    func fenceAndAdmin() throws {
        try withServer { server, client in
            try Self.populate(client)
            let admin = try server.stream(nil)
            let observer = try client.createObserver()
            let id = try Self.register(client, observer, ["class": "Order", "select": ["total"], "options": ["new"]])
            let stream = try server.stream(observer)
            #expect(try client.delete("/v1/observers/\(observer)/queries/\(id)").status == 204)
            try client.set("o1", "total", 7)
            let cancelled = try #require(try stream.next())
            #expect(
                cancelled.name == "cancelled" && cancelled["query"] == .string(id)
                    && cancelled["reason"] == "unobserved")
            try client.createObject("x")
            try client.observe(observer, "x", "n")
            try client.set("x", "n", 1)
            #expect(try stream.next()?.name == "change", "no query record after the fence")
            try expectRefused(client, 404, "notFound") { try client.delete("/v1/observers/\(observer)/queries/\(id)") }
            try expectRefused(client, 404, "notFound") { try client.get("/v1/observers/\(observer)/queries/\(id)") }
            let other = try Self.register(client, observer, ["class": "Customer"])
            #expect(try client.delete("/v1/observers/\(observer)").status == 204)
            var seen: [SSEEvent] = []
            while seen.filter({ $0.name == "queryRemoved" }).count < 2, seen.count < 200, let event = try admin.next() {
                seen.append(event)
            }
            let added = seen.filter { $0.name == "queryAdded" }
            let removed = seen.filter { $0.name == "queryRemoved" }
            #expect(added.count == 2 && removed.count == 2, "\(seen.map(\.name))")
            #expect(removed.map { $0["query"] } == [.string(id), .string(other)])
            #expect(removed.map { $0["reason"] } == ["unobserved", "observerRemoved"])
            #expect(removed.last?["class"] == "Customer" && added.first?["observer"] == .string(observer))
        }
    }

    @Test("POST /v1/query answers the window without registering; an observer's token may use it")
    func oneShot() throws {
        try withServer(configure: { $0.token = "admin" }) { _, client in
            let auth = ["Authorization": "Bearer admin"]
            _ = try client.send("PUT", "/v1/classes/Order", json: ["properties": Self.orders], headers: auth)
            for index in 1...4 {
                _ = try client.send(
                    "POST", "/v1/objects",
                    json: [
                        "id": .string("o\(index)"), "class": "Order",
                        "values": ["total": .int(index), "group": index < 3 ? "a" : "b"],
                    ],
                    headers: auth)
            }
            let created = try client.send("POST", "/v1/observers", json: [:], headers: auth)
            guard case .string(let token) = created["token"] else { throw TestClientError(created.text) }
            let before = try client.get("/v1/stats", headers: auth)["revision"]
            let answer = try client.send(
                "POST", "/v1/query",
                json: [
                    "class": "Order", "where": [["group", "==", "b"]], "orderBy": [["total", "desc"]],
                    "select": ["total"],
                ],
                headers: ["Authorization": "Bearer \(token)"])
            #expect(answer.status == 200, "\(answer.text)")
            #expect(
                answer["objects"] == [["id": "o4", "values": ["total": 4]], ["id": "o3", "values": ["total": 3]]])
            #expect(answer["total"] == 2 && answer["revision"] == before)
            #expect(try client.get("/v1/stats", headers: auth)["revision"] == before, "nothing registered")
            let refused = try client.send(
                "POST", "/v1/query", json: ["class": "Order", "options": ["new"]], headers: auth)
            #expect(
                refused.status == 400 && refused.errorCode == "invalidRequest",
                "options are not part of a one-shot query")
            let missing = try client.send("POST", "/v1/query", json: ["class": "Nope"], headers: auth)
            #expect(missing.status == 404)
        }
    }

    @Test("bad definitions answer the section 2 error and register nothing")
    func refusals() throws {
        try withServer { _, client in
            try Self.populate(client)
            let observer = try client.createObserver()
            let path = "/v1/observers/\(observer)/queries"
            let cases: [(JSON, Int, String)] = [
                (["class": "Nope"], 404, "notFound"),
                (["class": "Order", "where": [["totl", "==", 1]]], 400, "unknownKeyPath"),
                (["class": "Order", "where": [["total", "=~", 1]]], 400, "invalidRequest"),
                (["class": "Order", "where": [["total", "<", "x"]]], 400, "typeMismatch"),
                (["class": "Order", "where": [["status", "in", []]]], 400, "invalidRequest"),
                (["class": "Order", "options": ["prior"]], 400, "invalidRequest"),
                (["class": "Order", "options": ["nwe"]], 400, "invalidRequest"),
                (["class": "Order", "limit": 0], 400, "invalidRequest"),
                (["class": "Order", "throttle": -1], 400, "invalidRequest"),
                (["class": "Order", "orderBy": "total"], 400, "invalidRequest"),
                (["class": "Order", "select": ["bad key"]], 400, "invalidKeyPath"),
                (["clas": "Order"], 400, "invalidRequest"),
            ]
            for (body, status, code) in cases {
                try expectRefused(client, status, code, readBack: path) { try client.send("POST", path, json: body) }
            }
            try expectRefused(client, 404, "notFound") {
                try client.send("POST", "/v1/observers/obs_missing/queries", json: ["class": "Order"])
            }
        }
    }

    @Test("--max-queries answers 429 and changes nothing; the dedup at the limit still answers 200")
    func limits() throws {
        try withServer(configure: { $0.maxQueries = 2 }) { _, client in
            let a = try client.createObserver()
            let b = try client.createObserver()
            try Self.register(client, a, ["limit": 1])
            try Self.register(client, b, ["limit": 2])
            try expectRefused(client, 429, "limitExceeded", readBack: "/v1/observers/\(a)/queries") {
                try client.send("POST", "/v1/observers/\(a)/queries", json: ["limit": 3])
            }
            try Self.register(client, a, ["limit": 1], status: 200)
        }
    }

    @Test("throttle: the folded record is the difference between the last window sent and the window now")
    func throttle() throws {
        try Self.withQuery(
            [
                "class": "Order", "orderBy": [["total", "desc"]], "limit": 2, "select": ["total"],
                "options": ["new", "old"], "throttle": 400,
            ]
        ) { _, client, stream, observer, _ in
            try client.set("o1", "total", 90)  // sent at once: the window was quiet
            let first = try #require(try stream.next())
            #expect(first["inserted"] == [["index": 0, "id": "o1", "new": ["total": 90]]])
            try client.set("o2", "total", 95)  // within 400 ms: folded
            try client.set("o2", "total", 96)
            try client.set("o3", "total", 1)  // outside the window: no change to what is sent
            let folded = try #require(try stream.next(timeout: 3))
            #expect(folded["removed"] == [["index": 1, "id": "o5", "old": ["total": 50]]])
            #expect(folded["inserted"] == [["index": 0, "id": "o2", "new": ["total": 96]]])
            #expect(try stream.next(timeout: 0.8) == nil, "nothing more: the folded record said it all")
        }
    }

    @Test("after a reset the rebuild holds one initial record per query: the window now")
    func resetRebuild() throws {
        try withServer { server, client in
            try Self.populate(client)
            let observer = try client.createObserver(["replay": 2])
            let id = try Self.register(
                client, observer,
                [
                    "class": "Order", "orderBy": [["total", "desc"]], "limit": 2, "select": ["total"],
                    "options": ["new"],
                ])
            for value in [60, 70, 80, 90] { try client.set("o1", "total", .int(value)) }
            try client.set("o2", "total", 85)
            let stream = try server.stream(observer, headers: ["Last-Event-ID": "1"])
            let events = try stream.events(2)
            #expect(events[0].name == "reset")
            #expect(events[1].name == "query" && events[1].id == nil && events[1]["initial"] == true)
            #expect(events[1]["query"] == .string(id))
            #expect(
                events[1]["inserted"] == [
                    ["index": 0, "id": "o1", "new": ["total": 90]], ["index": 1, "id": "o2", "new": ["total": 85]],
                ])
        }
    }
}
