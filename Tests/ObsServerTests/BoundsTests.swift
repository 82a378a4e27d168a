import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// Every structure that grows with what clients do has a bound, configurable and visible in
/// `/metrics`; reaching it refuses the request (429) or drops the oldest, and changes nothing else.
@Suite("Bounds: every growing structure has a limit")
struct BoundsTests {
    @Test("keepalives move an observer's lease deadline; they never add one")
    func leaseDeadlines() throws {
        try withServer { server, client in
            let first = try client.createObserver()
            _ = try client.createObserver()
            #expect(try gauge(client, "obs_lease_deadlines") == 2)
            for _ in 0..<2_000 {
                #expect(try client.send("POST", "/v1/observers/\(first)/keepalive").status == 200)
            }
            #expect(try gauge(client, "obs_lease_deadlines") == 2)
            let stream = try server.stream(first)
            #expect(try gauge(client, "obs_lease_deadlines") == 1, "a connected observer's lease does not count")
            stream.close()
            try waitUntil(within: .seconds(1)) { try gauge(client, "obs_lease_deadlines") == 2 }
            #expect(try client.delete("/v1/observers/\(first)").status == 204)
            #expect(try gauge(client, "obs_lease_deadlines") == 1)
        }
    }

    @Test("the notification queue refuses postings past its count, changing nothing")
    func queueCount() throws {
        try withServer(configure: { $0.maxQueuedNotifications = 3 }) { _, client in
            for index in 0..<3 {
                let queued = try client.send(
                    "POST", "/v1/notifications", json: ["name": .string("N\(index)"), "posting": "idle"])
                #expect(queued.status == 200, "\(queued.text)")
            }
            let refused = try expectRefused(client, 429, "limitExceeded") {
                try client.send("POST", "/v1/notifications", json: ["name": "N3", "posting": "asap"])
            }
            #expect(refused.json["error"]?["details"]?["limit"] == 3)
            #expect(try gauge(client, "obs_queued_notifications") == 3)
            // Coalescing makes room: the latest replaces a queued one, within the limit.
            let coalesced = try client.send(
                "POST", "/v1/notifications", json: ["name": "N0", "posting": "idle", "coalesce": ["name"]])
            #expect(coalesced.status == 200 && coalesced["coalesced"] == 1, "\(coalesced.text)")
        }
    }

    @Test("the notification queue refuses postings past its bytes")
    func queueBytes() throws {
        try withServer(configure: { $0.maxQueuedNotificationBytes = 10_000 }) { _, client in
            let info = JSON.object(["blob": .string(String(repeating: "x", count: 4_000))])
            for _ in 0..<2 {
                let queued = try client.send(
                    "POST", "/v1/notifications", json: ["name": "Big", "posting": "idle", "userInfo": info])
                #expect(queued.status == 200, "\(queued.text)")
            }
            try expectRefused(client, 429, "limitExceeded") {
                try client.send(
                    "POST", "/v1/notifications", json: ["name": "Big", "posting": "idle", "userInfo": info])
            }
            let bytes = try gauge(client, "obs_queued_notification_bytes")
            #expect(bytes > 8_000 && bytes <= 10_000)
        }
    }

    @Test("replay buffers stay within their byte budgets, the admin stream's too")
    func replayBudgets() throws {
        try withServer(configure: {
            $0.maxReplayBytes = 300_000
            $0.maxAdminReplayBytes = 500_000
        }) { _, client in
            try client.createObject("a")
            let observers = try (0..<3).map { _ in try client.createObserver(["replay": 100_000]) }
            for observer in observers { try client.observe(observer, "a", "blob", options: ["new", "old"]) }
            let blob = JSON.string(String(repeating: "y", count: 50_000))
            for _ in 0..<40 { try client.set("a", "blob", blob) }
            let replay = try gauge(client, "obs_replay_bytes")
            let admin = try gauge(client, "obs_admin_replay_bytes")
            #expect(replay <= 3 * 300_000 && replay > 3 * 150_000, "replay buffers hold \(replay) bytes")
            #expect(admin <= 500_000 && admin > 250_000, "the admin buffer holds \(admin) bytes")
            let observer = try client.get("/v1/observers/\(observers[0])")
            guard case .int(let last) = observer["lastEventId"] else { throw TestClientError("no lastEventId") }
            #expect(last == 40, "ids go on: every event was made, the oldest left")
        }
    }

    @Test("with default limits, a body of up to 1 MiB is never refused for a long string")
    func defaultStringLimit() throws {
        try withServer { _, client in
            let long = String(repeating: "z", count: 1_048_576 - 100)
            let response = try client.send("POST", "/v1/objects", json: ["id": "big", "values": ["s": .string(long)]])
            #expect(response.status == 201, "\(response.text.prefix(300))")
            #expect(try client.get("/v1/objects/big/values/s")["value"] == .string(long))
        }
    }
}

/// A gauge or counter's value from `/metrics`.
func gauge(_ client: TestClient, _ name: String) throws -> Int {
    let text = try client.get("/metrics").text
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(name + " ") }),
        let value = Int(line.dropFirst(name.count + 1))
    else { throw TestClientError("no metric \(name)") }
    return value
}

extension JSON {
    /// A member of an object (nil for anything else).
    subscript(key: String) -> JSON? {
        if case .object(let members) = self { members[key] } else { nil }
    }
}
