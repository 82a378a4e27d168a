import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// Section 14 through HTTP: owners, `onRemove`, the beacon route, and presence that neither
/// leaves on a reconnect within the lease nor outlives it.
@Suite("Owned objects and presence over HTTP")
struct OwnedObjectAPITests {
    static let admin = ["Authorization": "Bearer admin-secret"]

    static func withPresence(_ body: (TestServer, TestClient) throws -> Void) throws {
        try withServer(configure: { $0.token = "admin-secret" }) { server, client in
            let presence: JSON = ["properties": ["user": ["type": "string"], "room": ["type": "string"]]]
            #expect(try client.send("PUT", "/v1/classes/Presence", json: presence, headers: admin).status == 201)
            #expect(
                try client.send("POST", "/v1/objects", json: ["id": "room", "values": ["last": .null]], headers: admin)
                    .status == 201)
            try body(server, client)
        }
    }

    /// An observer (lease `lease`) owning presence object `p-<user>`, patching `room` on removal.
    static func join(_ client: TestClient, _ user: String, lease: Int) throws -> (id: String, token: String) {
        let made = try client.send(
            "POST", "/v1/observers",
            json: [
                "lease": .int(lease),
                "onRemove": [["object": "room", "values": ["last": .string("\(user) left")]]],
            ], headers: admin)
        guard case .string(let id) = made["id"], case .string(let token) = made["token"] else {
            throw TestClientError("no observer: \(made.text)")
        }
        let object = try client.send(
            "POST", "/v1/objects",
            json: [
                "id": .string("p-\(user)"), "class": "Presence", "owner": .string(id),
                "values": ["user": .string(user), "room": "r1"],
            ], headers: admin)
        #expect(object.status == 201 && object["owner"] == .string(id), "\(object.text)")
        return (id, token)
    }

    static func value(_ client: TestClient, _ id: String, _ key: String) throws -> JSON {
        try client.get("/v1/objects/\(id)/values/\(key)", headers: admin)["value"]
    }

    static func exists(_ client: TestClient, _ id: String) throws -> Bool {
        try client.get("/v1/objects/\(id)", headers: admin).status == 200
    }

    @Test("the beacon route removes the observer with ?access_token=: its object goes, its patch applies, at once")
    func beacon() throws {
        try Self.withPresence { server, client in
            let made = try client.send("POST", "/v1/observers", json: ["lease": 600], headers: Self.admin)
            guard case .string(let watcher) = made["id"] else { throw TestClientError("no observer") }
            let stream = try server.stream(watcher, headers: Self.admin)
            let query = try client.send(
                "POST", "/v1/observers/\(watcher)/queries",
                json: ["class": "Presence", "where": [["room", "==", "r1"]], "select": ["user"], "options": ["new"]],
                headers: Self.admin)
            #expect(query.status == 201)
            let (ann, token) = try Self.join(client, "ann", lease: 60)
            _ = try stream.events(1)  // the join
            let removed = try client.send(
                "POST", "/v1/observers/\(ann)/remove?access_token=\(token)", body: [],
                headers: ["Content-Type": "text/plain;charset=UTF-8"])
            #expect(removed.status == 204, "\(removed.text)")
            let leave = try #require(try stream.events(1).first)
            #expect(leave.name == "query" && leave.data.contains(#""removed":[{"index":0,"id":"p-ann"}]"#))
            #expect(try !Self.exists(client, "p-ann"))
            #expect(try Self.value(client, "room", "last") == "ann left")
            // Another observer's token may not remove it; an unknown one is 404.
            let (bob, _) = try Self.join(client, "bob", lease: 60)
            #expect(try client.send("POST", "/v1/observers/\(bob)/remove?access_token=\(token)").status == 401)
            #expect(try client.send("POST", "/v1/observers/obs_none/remove", headers: Self.admin).status == 404)
        }
    }

    @Test("a client that reconnects within its lease never leaves; one that does not is gone within lease + 1 s")
    func leaseAndReconnect() throws {
        try Self.withPresence { server, client in
            let (ann, token) = try Self.join(client, "ann", lease: 2)
            var stream = try server.stream(ann, headers: ["Authorization": "Bearer \(token)"])
            for _ in 0..<4 {  // 4 × 1.2 s: twice the lease, never more than 1.2 s without a stream
                stream.close()
                Thread.sleep(forTimeInterval: 1.2)
                #expect(try Self.exists(client, "p-ann"), "left on a reconnect within the lease")
                stream = try server.stream(ann, headers: ["Authorization": "Bearer \(token)"])
            }
            stream.close()
            let closed = Date()
            while try Self.exists(client, "p-ann"), Date().timeIntervalSince(closed) < 6 {
                Thread.sleep(forTimeInterval: 0.05)
            }
            let took = Date().timeIntervalSince(closed)
            #expect(try !Self.exists(client, "p-ann"))
            #expect(took < 2 + 1, "gone \(took) s after its stream closed (lease 2 s)")
            #expect(try Self.value(client, "room", "last") == "ann left")
        }
    }
}
