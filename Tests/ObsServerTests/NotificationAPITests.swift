import Foundation
import ObservationCore
import Testing

@testable import ObsServer

extension TestClient {
    @discardableResult
    func subscribe(_ observer: String, name: String? = nil, object: String? = nil) throws -> TestResponse {
        var body = JSONObject()
        if let name { body["name"] = .string(name) }
        if let object { body["object"] = .string(object) }
        return try send("POST", "/v1/observers/\(observer)/subscriptions", json: .object(body))
    }

    func post(_ body: JSON) throws -> TestResponse { try send("POST", "/v1/notifications", json: body) }
}

@Suite("Notification center API")
struct NotificationAPITests {
    @Test("named, nameless and wildcard subscriptions each receive what they match, once per subscription")
    func matching() throws {
        try withServer { server, client in
            let named = try client.createObserver()
            let nameless = try client.createObserver()
            let wildcard = try client.createObserver()
            #expect(try client.subscribe(named, name: "Login", object: "acct-1").status == 201)
            #expect(try client.subscribe(named, name: "Login").status == 201)
            #expect(try client.subscribe(nameless, object: "acct-1").status == 201)
            #expect(try client.subscribe(wildcard).status == 201)
            let streams = try [named, nameless, wildcard].map { try server.stream($0) }
            let posted = try client.post(["name": "Login", "object": "acct-1", "userInfo": ["user": "ada"]])
            #expect(posted.status == 200)
            #expect(posted["delivered"] == 4)
            let namedEvents = try streams[0].events(2)
            #expect(namedEvents.allSatisfy { $0.name == "notification" && $0["userInfo"] == ["user": "ada"] })
            #expect(Set(namedEvents.compactMap { $0["subscription"] }).count == 2, "one per matching subscription")
            #expect(try streams[1].next()?["object"] == "acct-1")
            #expect(try streams[2].next()?["name"] == "Login")
            #expect(try client.post(["name": "Logout"])["delivered"] == 1, "only the wildcard matches")
            #expect(try streams[0].next(timeout: 0.3) == nil)
            #expect(try streams[1].next(timeout: 0.3) == nil, "an object subscription ignores postings without one")
        }
    }

    @Test("subscriptions are deduplicated, listed, and removed by id or by name/object rules")
    func lifecycle() throws {
        try withServer { _, client in
            let id = try client.createObserver()
            let first = try client.subscribe(id, name: "N")
            let again = try client.subscribe(id, name: "N")
            #expect(first.status == 201 && again.status == 200 && again["deduplicated"] == true)
            #expect(first["id"] == again["id"])
            try client.subscribe(id, name: "N", object: "o")
            try client.subscribe(id, object: "o")
            #expect(try client.get("/v1/stats")["subscriptions"] == 3)
            guard case .string(let subscription) = first["id"] else { return }
            #expect(try client.delete("/v1/observers/\(id)/subscriptions/\(subscription)").status == 204)
            try expectRefused(client, 404, "notFound") {
                try client.delete("/v1/observers/\(id)/subscriptions/\(subscription)")
            }
            try expectRefused(client, 404, "notFound") { try client.delete("/v1/observers/\(id)/subscriptions?name=M") }
            #expect(try client.delete("/v1/observers/\(id)/subscriptions?object=o").status == 204)
            #expect(try client.get("/v1/observers/\(id)/subscriptions")["subscriptions"] == [])
            try client.subscribe(id, name: "X")
            #expect(try client.delete("/v1/observers/\(id)").status == 204)
            #expect(try client.get("/v1/stats")["subscriptions"] == 0)
        }
    }

    @Test(
        "bad subscriptions and postings answer 400 and change nothing",
        arguments: [
            ("/subscriptions", ["name": ""], "invalidName"),
            ("/subscriptions", ["object": "not an id"], "invalidName"),
            ("/subscriptions", ["name": 5], "typeMismatch"),
            ("/subscriptions", ["nam": "N"], "invalidRequest"),
            ("/v1/notifications", ["object": "o"], "invalidRequest"),
            ("/v1/notifications", ["name": "N", "posting": "later"], "invalidRequest"),
            ("/v1/notifications", ["name": "N", "coalesce": ["name"]], "invalidRequest"),
            ("/v1/notifications", ["name": "N", "posting": "asap", "coalesce": ["sender"]], "invalidRequest"),
            ("/v1/notifications", ["name": "tab\there"], "invalidName"),
        ] as [(String, JSON, String)])
    func invalid(path: String, body: JSON, code: String) throws {
        try withServer { _, client in
            let id = try client.createObserver()
            let full = path.hasPrefix("/v1") ? path : "/v1/observers/\(id)\(path)"
            try expectRefused(client, 400, code) { try client.send("POST", full, json: body) }
            #expect(try client.get("/v1/stats")["subscriptions"] == 0)
        }
    }

    @Test("asap postings arrive within milliseconds; idle ones after 50 ms of quiet")
    func queuedTiming() throws {
        try withServer { server, client in
            let id = try client.createObserver()
            try client.subscribe(id)
            let stream = try server.stream(id)
            var started = Date()
            #expect(try client.post(["name": "Soon", "posting": "asap"]).json == ["queued": true, "coalesced": 0])
            #expect(try stream.next(timeout: 2)?["name"] == "Soon")
            #expect(Date().timeIntervalSince(started) < 0.2)
            started = Date()
            _ = try client.post(["name": "Later", "posting": "idle"])
            #expect(try stream.next(timeout: 0.03) == nil, "idle waits for 50 ms without requests")
            #expect(try stream.next(timeout: 2)?["name"] == "Later")
            let elapsed = Date().timeIntervalSince(started)
            #expect(elapsed >= 0.045 && elapsed < 1.2, "\(elapsed) s")
        }
    }

    @Test("an idle posting goes out at most a second later, even while requests keep coming")
    func idleDeadline() throws {
        // Requests every ~20 ms never leave 300 ms of quiet, even in a slow sanitizer build: only the cap applies.
        try withServer(configure: { $0.idleQuiet = .milliseconds(300) }) { server, client in
            let id = try client.createObserver()
            try client.subscribe(id)
            let stream = try server.stream(id)
            let started = Date()
            _ = try client.post(["name": "Eventually", "posting": "idle"])
            var delivered: Date?
            while delivered == nil, Date().timeIntervalSince(started) < 3 {
                _ = try client.get("/healthz")
                if try stream.next(timeout: 0.02) != nil { delivered = Date() }
            }
            let elapsed = try #require(delivered).timeIntervalSince(started)
            #expect(elapsed >= 0.9 && elapsed < 1.5, "\(elapsed) s")
        }
    }

    @Test("coalesced postings deliver once, with the last posting's userInfo")
    func coalescing() throws {
        // A longer quiet period keeps the three postings in the queue together, however slow the build.
        try withServer(configure: { $0.idleQuiet = .milliseconds(600) }) { server, client in
            let id = try client.createObserver()
            try client.subscribe(id, name: "Changed")
            let stream = try server.stream(id)
            var answers: [JSON] = []
            for index in 1...3 {
                answers.append(
                    try client.post([
                        "name": "Changed", "posting": "idle", "coalesce": ["name"], "userInfo": ["n": .int(index)],
                    ])
                    .json)
            }
            #expect(
                answers.map { answer -> JSON in
                    if case .object(let members) = answer { return members["coalesced"] ?? .null }
                    return .null
                } == [0, 1, 1])
            let delivered = try stream.next(timeout: 3)
            #expect(delivered?["userInfo"] == ["n": 3])
            #expect(try stream.next(timeout: 0.3) == nil, "one delivery for the coalesced three")
        }
    }

    @Test("the admin stream reports subscriptions and postings")
    func admin() throws {
        try withServer { server, client in
            let admin = try server.stream(nil)
            let id = try client.createObserver()
            try client.subscribe(id, name: "N")
            _ = try client.post(["name": "N", "userInfo": ["k": 1]])
            #expect(try client.delete("/v1/observers/\(id)/subscriptions").status == 204)
            let events = try admin.events(4)
            #expect(
                events.map(\.name) == [
                    "observerCreated", "subscriptionAdded", "notificationPosted", "subscriptionRemoved",
                ])
            #expect(events[2]["delivered"] == 1 && events[2]["userInfo"] == ["k": 1])
            #expect(events[3]["reason"] == "unobserved")
        }
    }
}
