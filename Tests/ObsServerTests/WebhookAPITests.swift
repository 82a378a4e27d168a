import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("Deliveries to a URL over HTTP (section 16)")
struct WebhookAPITests {
    /// A server that may push to loopback, a receiver, and an object `acct-1` {"balance": 0}.
    private func withWebhooks(
        receiver mode: LoopbackReceiver.Mode = .status(204), token: String? = nil,
        _ body: (TestServer, TestClient, LoopbackReceiver) throws -> Void
    ) throws {
        let receiver = try LoopbackReceiver(mode: mode)
        defer { receiver.stop() }
        try withServer(configure: {
            $0.webhookHosts = "127.0.0.1:*"
            $0.token = token
        }) { server, client in
            let headers = token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
            let created = try client.send(
                "POST", "/v1/objects", json: ["id": "acct-1", "values": ["balance": 0]], headers: headers)
            #expect(created.status == 201)
            try body(server, client, receiver)
        }
    }

    private func deliver(_ receiver: LoopbackReceiver, _ extra: JSONObject = [:]) -> JSON {
        var target: JSONObject = ["url": .string("http://127.0.0.1:\(receiver.port)/hook")]
        for (key, value) in extra { target[key] = value }
        return ["deliver": .object(target)]
    }

    private func events(_ received: LoopbackReceiver.Received) -> [JSON] {
        guard case .object(let body) = (try? JSONParser.parse(received.body)) ?? .null,
            case .array(let events)? = body["events"]
        else { return [] }
        return events
    }

    /// Polls `GET /v1/observers/{id}` until `delivery` satisfies `predicate` (bounded).
    private func waitForDelivery(
        _ client: TestClient, _ id: String, _ predicate: (JSONObject) -> Bool
    ) throws -> JSONObject {
        let deadline = ContinuousClock.now + .seconds(10)
        var last: JSONObject = [:]
        while ContinuousClock.now < deadline {
            if case .object(let delivery) = try client.get("/v1/observers/\(id)")["delivery"] {
                last = delivery
                if predicate(delivery) { return delivery }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        Issue.record("delivery never matched: \(last)")
        return last
    }

    @Test("changes are pushed, signed, as the observer's poll reads them; 2xx moves the cursor")
    func delivered() throws {
        try withWebhooks { server, client, receiver in
            let created = try client.send("POST", "/v1/observers", json: deliver(receiver, ["maxBatch": 2]))
            #expect(created.status == 201)
            guard case .string(let id) = created["id"], case .object(let target) = created["deliver"],
                case .string(let secret)? = target["secret"]
            else { throw TestClientError("no delivery in \(created.text)") }
            #expect(created["expiresAt"] == .null)  // no lease
            try client.observe(id, "acct-1", "balance")
            for value in 1...5 { try client.set("acct-1", "balance", .int(value)) }
            _ = try waitForDelivery(client, id) { $0["acknowledged"] == 5 }
            let received = receiver.received
            for request in received {
                // At most maxBatch events each; the webhook-id names the batch's last event.
                let batch = events(request)
                #expect((1...2).contains(batch.count))
                guard case .object(let last)? = batch.last, case .string(let lastID)? = last["id"] else { continue }
                #expect(request.headers["webhook-id"] == "\(id):\(lastID)")
            }
            let pushed = received.flatMap(events)
            let polled = try client.get(
                "/v1/observers/\(id)/events?after=0&limit=100", headers: ["Accept": "application/json"])
            guard case .array(let expected) = polled["events"] else { throw TestClientError(polled.text) }
            #expect(pushed.count == 5)
            for (push, poll) in zip(pushed, expected) {
                guard case .object(let a) = push, case .object(let b) = poll else { continue }
                #expect(a["data"] == b["data"])
                #expect(a["event"] == b["event"])
                #expect(a["id"] == b["id"].flatMap { if case .int(let n) = $0 { .string(String(n)) } else { nil } })
            }
            let key = try #require(WebhookSignature.key(of: secret))
            for request in received {
                let timestamp = try #require(Int64(request.headers["webhook-timestamp"] ?? ""))
                #expect(abs(timestamp - Int64(Date().timeIntervalSince1970)) < 30)
                let expectedSignature = WebhookSignature.sign(
                    key: key, id: request.headers["webhook-id"] ?? "", timestamp: timestamp, body: request.body)
                #expect(request.headers["webhook-signature"] == expectedSignature)
            }
            let delivery = try waitForDelivery(client, id) { $0["acknowledged"] == 5 }
            #expect(delivery["state"] == "idle")
            #expect(delivery["backlog"] == 0)
            #expect(delivery["lastStatus"] == 204)
            #expect(delivery["secret"] == nil)
            #expect(try client.get("/v1/observers/\(id)").text.contains(secret) == false)
            let metrics = try client.get("/metrics").text
            #expect(metrics.contains("obs_webhook_deliveries_total{outcome=\"delivered\"} \(received.count)\n"))
            #expect(metrics.contains("\nobs_webhook_events_acknowledged_total 5\n"))
            #expect(metrics.contains("\nobs_webhook_backlog 0\n"))
            #expect(metrics.contains("\nobs_webhook_active 1\n"))
            _ = server
        }
    }

    @Test("a failed batch goes again, the same bytes and webhook-id, and new events wait behind it")
    func retried() throws {
        try withWebhooks(receiver: .status(500)) { _, client, receiver in
            let id = try client.createObserver(deliver(receiver))
            try client.observe(id, "acct-1", "balance")
            try client.set("acct-1", "balance", 1)
            let failing = receiver.waitFor(2)
            try client.set("acct-1", "balance", 2)
            let delivery = try waitForDelivery(client, id) { $0["state"] == "retrying" }
            #expect(delivery["lastStatus"] == 500)
            #expect(delivery["acknowledged"] == 0)
            receiver.mode = .status(200)
            _ = try waitForDelivery(client, id) { $0["acknowledged"] == 2 }
            let received = receiver.received
            let retries = received.prefix { $0.headers["webhook-id"] == "\(id):1" }
            #expect(retries.count >= 2)
            #expect(Set(retries.map(\.body)).count == 1)
            #expect(failing.count >= 2)
            // Backoff: the second attempt 0.4–0.6 s after the first.
            if retries.count >= 2 {
                let gap = retries[1].at - retries[0].at
                #expect(gap >= .milliseconds(380) && gap <= .milliseconds(800), "gap \(gap)")
            }
            #expect(received.last?.headers["webhook-id"] == "\(id):2")
        }
    }

    @Test("a buffer that overflows while the URL fails: the next delivery begins with reset and the rebuild")
    func overflow() throws {
        try withWebhooks(receiver: .status(500)) { _, client, receiver in
            var body = deliver(receiver, ["maxBatch": 1])
            if case .object(var members) = body { members["replay"] = 4; body = .object(members) }
            let id = try client.createObserver(body)
            try client.observe(id, "acct-1", "balance")
            try client.set("acct-1", "balance", 1)
            _ = receiver.waitFor(1)
            for value in 2...10 { try client.set("acct-1", "balance", .int(value)) }
            receiver.mode = .status(200)
            _ = try waitForDelivery(client, id) { $0["acknowledged"] == 10 }
            let batches = receiver.received.map(events)
            let afterFirst = batches.drop { batch in
                guard case .object(let first)? = batch.first else { return false }
                return first["id"] == "1"
            }
            guard case .object(let reset)? = afterFirst.first?.first else { throw TestClientError("no batch after 1") }
            #expect(reset["event"] == "reset")
            #expect(reset["id"] == nil)
            guard case .object(let data)? = reset["data"] else { throw TestClientError("no reset data") }
            #expect(data["reason"] == "gap")
            #expect(data["oldestAvailable"] == 7)
            // maxBatch 1: the reset alone, then its rebuild record, then nothing older than the reset covered.
            guard case .object(let rebuilt)? = afterFirst.dropFirst().first?.first,
                case .object(let record)? = rebuilt["data"]
            else { throw TestClientError("no rebuild record") }
            #expect(record["initial"] == true)
            #expect(record["new"] == 10)
        }
    }

    @Test(
        "unacknowledged events outlive restarts through checkpoints (at stop, and every N commands)",
        arguments: [2, 10_000])
    func checkpointed(checkpointEvery: Int) throws {
        let directory = try TemporaryDirectory()
        let receiver = try LoopbackReceiver(mode: .status(500))
        defer { receiver.stop() }
        let configure: (inout ServerConfig) -> Void = {
            $0.webhookHosts = "127.0.0.1:*"
            $0.dataDir = directory.path
            $0.checkpointCommands = checkpointEvery
        }
        let id = try withServer(configure: configure) { _, client in
            #expect(
                try client.send("POST", "/v1/objects", json: ["id": "acct-1", "values": ["balance": 0]]).status == 201)
            let id = try client.createObserver(deliver(receiver, ["maxBatch": 3]))
            try client.observe(id, "acct-1", "balance")
            try client.set("acct-1", "balance", 1)
            receiver.mode = .status(200)
            _ = try waitForDelivery(client, id) { $0["acknowledged"] == 1 }
            receiver.mode = .status(500)
            for value in 2...8 { try client.set("acct-1", "balance", .int(value)) }
            _ = receiver.waitFor(2)
            return id
        }
        let before = receiver.received.count
        receiver.mode = .status(200)
        try withServer(configure: configure) { _, client in
            _ = try waitForDelivery(client, id) { $0["acknowledged"] == 8 }
            let after = receiver.received.dropFirst(before).flatMap(events)
            let ids = after.compactMap { event -> String? in
                guard case .object(let members) = event, case .string(let id)? = members["id"] else { return nil }
                return id
            }
            #expect(after.count == 7, "no reset, no rebuild: \(after)")
            #expect(ids == (2...8).map(String.init))
        }
    }

    @Test(
        "deliver is checked: hosts, scheme, secret, ranges, members",
        arguments: [
            (["url": "http://10.1.1.1/hook"] as JSONObject),
            ["url": "ftp://127.0.0.1/hook"],
            ["url": "not a url"],
            ["url": "http://127.0.0.1:9/h", "secret": "whsec_short"],
            ["url": "http://127.0.0.1:9/h", "maxBatch": 0],
            ["url": "http://127.0.0.1:9/h", "maxBatch": 1001],
            ["url": "http://127.0.0.1:9/h", "timeout": 61],
            ["url": "http://127.0.0.1:9/h", "retries": 3],
            [:],
        ])
    func refused(target: JSONObject) throws {
        try withWebhooks { _, client, _ in
            let response = try client.send("POST", "/v1/observers", json: ["deliver": .object(target)])
            #expect(response.status == 400, "\(target): \(response.text)")
            #expect(response.errorCode == "invalidRequest")
        }
    }

    @Test("a name the list allows that resolves to an address it does not is never connected to")
    func resolvedAddressChecked() throws {
        let receiver = try LoopbackReceiver(mode: .status(204))
        defer { receiver.stop() }
        try withServer(configure: { $0.webhookHosts = "localhost:*" }) { _, client in
            #expect(
                try client.send("POST", "/v1/objects", json: ["id": "acct-1", "values": ["balance": 0]]).status == 201)
            let id = try client.createObserver(["deliver": ["url": .string("http://localhost:\(receiver.port)/hook")]])
            try client.observe(id, "acct-1", "balance")
            try client.set("acct-1", "balance", 1)
            let delivery = try waitForDelivery(client, id) { $0["state"] == "retrying" }
            guard case .string(let error)? = delivery["lastError"] else { throw TestClientError("\(delivery)") }
            #expect(error.contains("is not allowed by --webhook-hosts"), "\(error)")
            #expect(receiver.received.isEmpty)
        }
    }

    @Test("without --webhook-hosts no URL is allowed")
    func noHosts() throws {
        try withServer { _, client in
            let response = try client.send("POST", "/v1/observers", json: ["deliver": ["url": "http://127.0.0.1:9/h"]])
            #expect(response.status == 400)
        }
    }

    @Test("a delivering observer cannot also open an event stream")
    func noStream() throws {
        try withWebhooks { _, client, receiver in
            let id = try client.createObserver(deliver(receiver))
            let response = try client.get("/v1/observers/\(id)/events", headers: ["Accept": "text/event-stream"])
            #expect(response.status == 409)
            #expect(response.errorCode == "conflict")
        }
    }

    @Test("revoking the scoped token that made it ends its deliveries, even in the middle of a retry")
    func revoked() throws {
        try withWebhooks(receiver: .status(503), token: "admin") { _, client, receiver in
            let admin = ["Authorization": "Bearer admin"]
            let made = try client.send(
                "POST", "/v1/tokens", json: ["scopes": [["allow": ["read", "observe"], "ids": "acct-*"]]],
                headers: admin)
            guard case .string(let tokenID) = made["id"], case .string(let secret) = made["token"] else {
                throw TestClientError(made.text)
            }
            let scoped = ["Authorization": "Bearer \(secret)"]
            let created = try client.send("POST", "/v1/observers", json: deliver(receiver), headers: scoped)
            #expect(created.status == 201, "\(created.text)")
            guard case .string(let id) = created["id"] else { throw TestClientError(created.text) }
            let observed = try client.send(
                "POST", "/v1/observers/\(id)/observations", json: ["object": "acct-1", "keyPath": "balance"],
                headers: scoped)
            #expect(observed.status == 201)
            let set = try client.send("PUT", "/v1/objects/acct-1/values/balance", json: ["value": 1], headers: admin)
            #expect(set.status == 200)
            _ = receiver.waitFor(1)
            #expect(try client.send("DELETE", "/v1/tokens/\(tokenID)", headers: admin).status == 204)
            #expect(try client.get("/v1/observers/\(id)", headers: admin).status == 404)
            let count = receiver.received.count
            Thread.sleep(forTimeInterval: 1.5)  // past two more backoffs
            #expect(receiver.received.count == count)
        }
    }
}
