import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// Section 7.3: who made a change (`Obs-Client`, `by`), echoes a client does not want back
/// (`skipOwn`), and throttled registrations.
@Suite("Writers, echoes and throttling")
struct WriterTests {
    @Test("Obs-Client names the writer: records, notifications and admin events carry by; without it, none")
    func byOnEverythingAWriteCauses() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            #expect(
                try client.send("POST", "/v1/observers/\(id)/subscriptions", json: ["name": "Ping"]).status == 201)
            let stream = try server.stream(id)
            let admin = try SSEClient(port: server.port, path: "/v1/events?lastEventId=0")
            let tab = ["Obs-Client": "tab-1"]
            #expect(
                try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 1], headers: tab).status == 200)
            #expect(try client.send("POST", "/v1/notifications", json: ["name": "Ping"], headers: tab).status == 200)
            try client.set("a", "n", 2)
            let events = try stream.events(3)
            #expect(events.map(\.name) == ["change", "notification", "change"])
            #expect(events[0]["by"] == .string("tab-1") && events[1]["by"] == .string("tab-1"))
            #expect(events[2]["by"] == nil, "no Obs-Client, no by")
            var changed: [SSEEvent] = []
            var posted: SSEEvent?
            while changed.count < 2, let event = try admin.next(timeout: 3) {
                if event.name == "valueChanged" { changed.append(event) }
                if event.name == "notificationPosted" { posted = event }
            }
            #expect(changed.map { $0["by"] } == [.string("tab-1"), nil])
            #expect(posted?["by"] == .string("tab-1"))
            let refused = try client.send(
                "PUT", "/v1/objects/a/values/n", json: ["value": 3], headers: ["Obs-Client": "a b"])
            #expect(refused.status == 400 && refused.errorCode == "invalidRequest")
            #expect(try client.value("a", "n") == 2, "a refused write changes nothing")
        }
    }

    @Test("skipOwn: an observer created with a client name hears everyone's changes but its own")
    func skipOwn() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let tab = try client.createObserver(["client": "tab-1"])
            #expect(try client.get("/v1/observers/\(tab)")["client"] == .string("tab-1"))
            try client.observe(tab, "a", "n", options: ["new", "skipOwn"])
            let stream = try server.stream(tab)
            #expect(
                try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 1], headers: ["Obs-Client": "tab-1"])
                    .status == 200)
            #expect(
                try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 2], headers: ["Obs-Client": "tab-2"])
                    .status == 200)
            try client.set("a", "n", 3)
            let events = try stream.events(2)
            #expect(events.map { $0["new"] } == [.int(2), .int(3)], "its own write 1 is not echoed")
            #expect(try stream.next(timeout: 0.3) == nil)
            // skipOwn needs a client name to compare with.
            let plain = try client.createObserver()
            let refused = try client.send(
                "POST", "/v1/observers/\(plain)/observations",
                json: ["object": "a", "keyPath": "n", "options": ["new", "skipOwn"]])
            #expect(refused.status == 400 && refused.errorCode == "invalidRequest")
        }
    }

    @Test("throttle: 100 fast writes become a leading record and one folded trailing record")
    func throttleFolds() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            let registered = try client.send(
                "POST", "/v1/observers/\(id)/observations",
                json: ["object": "a", "keyPath": "n", "options": ["new", "old"], "throttle": 1_500])
            #expect(registered.status == 201)
            let stream = try server.stream(id)
            let started = Date()
            for value in 1...100 { try client.set("a", "n", .int(value)) }
            try #require(Date().timeIntervalSince(started) < 1.5, "the writes fit in one window")
            let revision = try currentRevision(client)
            let events = try stream.events(2, timeout: 4)
            #expect(events[0]["old"] == .int(0) && events[0]["new"] == .int(1), "the leading record at once")
            #expect(events[1]["kind"] == .string("setting"))
            #expect(events[1]["old"] == .int(1) && events[1]["new"] == .int(100), "the rest folded")
            #expect(events[1]["revision"] == .int(revision), "the revision of the latest change it holds")
            #expect(try stream.next(timeout: 0.6) == nil, "nothing more")
            // The folded record opened a window: the next change waits for its end.
            try client.set("a", "n", 101)
            let next = try stream.events(1, timeout: 4)
            #expect(next.first?["old"] == .int(100) && next.first?["new"] == .int(101))
        }
    }

    @Test("throttle: no folded record when the value ends where it started; bad throttles are refused")
    func throttleEdges() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            let observe = { (body: JSON) in try client.send("POST", "/v1/observers/\(id)/observations", json: body) }
            for bad: JSON in [
                ["object": "a", "keyPath": "n", "throttle": -1], ["object": "a", "keyPath": "n", "throttle": 60_001],
                ["object": "a", "keyPath": "n", "options": ["prior"], "throttle": 100],
            ] {
                let refused = try observe(bad)
                #expect(refused.status == 400 && refused.errorCode == "invalidRequest", "\(bad)")
            }
            #expect(try observe(["object": "a", "keyPath": "n", "throttle": "fast"]).errorCode == "typeMismatch")
            let registered = try observe(["object": "a", "keyPath": "n", "options": ["new"], "throttle": 1_500])
            #expect(registered.status == 201)
            guard case .array(let listed) = try client.get("/v1/observers/\(id)/observations")["observations"],
                case .object(let first)? = listed.first
            else { throw TestClientError("no observations listed") }
            #expect(first["throttle"] == .int(1_500))
            let stream = try server.stream(id)
            try client.set("a", "n", 1)  // sent at once
            try client.set("a", "n", 5)
            try client.set("a", "n", 1)  // back where the window started: nothing to send
            #expect(try stream.events(1).first?["new"] == .int(1))
            #expect(try stream.next(timeout: 2) == nil)
        }
    }

    // MARK: - Idempotency-Key

    @Test("a retry under the same Idempotency-Key answers what the first did and changes nothing")
    func idempotentRetry() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            let stream = try server.stream(id)
            let key = ["Idempotency-Key": "write-1"]
            let first = try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 1], headers: key)
            let revision = try currentRevision(client)
            let retry = try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 1], headers: key)
            #expect(first.status == 200 && retry.status == 200)
            #expect(retry.body == first.body, "byte for byte")
            #expect(retry.headers["idempotent-replayed"] == "true" && first.headers["idempotent-replayed"] == nil)
            #expect(try currentRevision(client) == revision, "the retry took no revision")
            #expect(try stream.events(1).first?["new"] == .int(1))
            #expect(try stream.next(timeout: 0.3) == nil, "one record, not two")
            // The same key with another request: 409, and nothing changes.
            let reused = try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 2], headers: key)
            #expect(reused.status == 409 && reused.errorCode == "idempotencyKeyReused")
            let elsewhere = try client.send("PUT", "/v1/objects/a/values/m", json: ["value": 1], headers: key)
            #expect(elsewhere.status == 409 && elsewhere.errorCode == "idempotencyKeyReused")
            #expect(try client.value("a", "n") == 1 && currentRevision(client) == revision)
            let bad = try client.send(
                "PUT", "/v1/objects/a/values/n", json: ["value": 3], headers: ["Idempotency-Key": ""])
            #expect(bad.status == 400 && bad.errorCode == "invalidRequest")
        }
    }

    @Test("an observer created under a key is created once; the retry gets the same id and token")
    func idempotentCreate() throws {
        try withServer { _, client in
            let key = ["Idempotency-Key": "create-observer-1"]
            let first = try client.send("POST", "/v1/observers", json: ["name": "tab"], headers: key)
            let retry = try client.send("POST", "/v1/observers", json: ["name": "tab"], headers: key)
            #expect(first.status == 201 && retry.status == 201)
            #expect(retry["id"] == first["id"] && retry["token"] == first["token"] && first["token"] != .null)
            #expect(retry.headers["location"] == first.headers["location"])
            guard case .array(let observers) = try client.get("/v1/observers")["observers"] else {
                throw TestClientError("no observer list")
            }
            #expect(observers.count == 1)
        }
    }

    @Test("a refused request keeps nothing under its key: the retry is evaluated anew")
    func refusedIsNotKept() throws {
        try withServer { _, client in
            let key = ["Idempotency-Key": "late"]
            #expect(try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 1], headers: key).status == 404)
            try client.createObject("a", values: ["n": 0])
            let retry = try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 1], headers: key)
            #expect(retry.status == 200 && retry.headers["idempotent-replayed"] == nil)
            #expect(try client.value("a", "n") == 1)
        }
    }

    @Test("keys and their answers survive a restart of a durable server, from the journal and from a checkpoint")
    func idempotencyIsDurable() throws {
        for checkpointEvery in [10_000, 1] {
            let directory = try TemporaryDirectory()
            var first: TestResponse?
            try withServer(configure: {
                $0.dataDir = directory.path
                $0.checkpointCommands = checkpointEvery
            }) { _, client in
                try client.createObject("a", values: ["n": 0])
                first = try client.send(
                    "PATCH", "/v1/objects/a", json: ["values": ["n": 5]], headers: ["Idempotency-Key": "k"])
                try client.set("a", "n", 6)
            }
            try withServer(configure: { $0.dataDir = directory.path }) { _, client in
                let retry = try client.send(
                    "PATCH", "/v1/objects/a", json: ["values": ["n": 5]], headers: ["Idempotency-Key": "k"])
                #expect(
                    retry.status == first?.status && retry.body == first?.body, "checkpoint every \(checkpointEvery)")
                #expect(retry.headers["idempotent-replayed"] == "true")
                #expect(try client.value("a", "n") == 6, "the retry did not apply again")
            }
        }
    }
}
