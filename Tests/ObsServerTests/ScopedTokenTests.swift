import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// Section 13 through HTTP: tokens made, listed, changed and revoked; what a scoped token and
/// the observers it makes may do; streams that end when their token does, within a second.
@Suite("Scoped tokens over HTTP")
struct ScopedTokenTests {
    static let admin = ["Authorization": "Bearer admin-secret"]
    static let jwtSecret = String(repeating: "k", count: 40)
    static let scopes: JSON = [
        ["allow": ["read", "observe", "write", "create"], "class": "Doc", "ids": "room1-*"],
        ["allow": ["post", "subscribe"], "names": "chat.room1.*"],
    ]

    /// A server with `--token` and `--jwt-secret`, classes Doc and Other, objects room1-a,
    /// room1-b (→ room1-a), room2-a, room1-o.
    static func withWorld(_ body: (TestServer, TestClient) throws -> Void) throws {
        try withServer(configure: {
            $0.token = "admin-secret"
            $0.jwtSecret = jwtSecret
        }) { server, client in
            let properties: JSON = ["properties": ["title": ["type": "string"], "ref": ["type": "ref"]]]
            for name in ["Doc", "Other"] {
                #expect(try client.send("PUT", "/v1/classes/\(name)", json: properties, headers: admin).status == 201)
            }
            for (id, className, values) in [
                ("room1-a", "Doc", ["title": "A"] as JSON), ("room2-a", "Doc", ["title": "B"]),
                ("room1-b", "Doc", ["ref": .reference("room1-a")]), ("room1-o", "Other", ["title": "O"]),
            ] {
                let created = try client.send(
                    "POST", "/v1/objects", json: ["id": .string(id), "class": .string(className), "values": values],
                    headers: admin)
                #expect(created.status == 201)
            }
            try body(server, client)
        }
    }

    /// Makes a token; returns its id and the headers that present it.
    static func token(_ client: TestClient, _ body: JSON = ["scopes": scopes]) throws -> (String, [String: String]) {
        let created = try client.send("POST", "/v1/tokens", json: body, headers: admin)
        #expect(created.status == 201, "\(created.text)")
        guard case .string(let id) = created["id"], case .string(let secret) = created["token"] else {
            throw TestClientError("no token: \(created.text)")
        }
        return (id, ["Authorization": "Bearer \(secret)"])
    }

    /// `error.details.reason` of an error answer.
    static func reason(_ response: TestResponse) -> String? {
        guard case .object(let root) = response.json, case .object(let error)? = root["error"],
            case .object(let details)? = error["details"], case .string(let reason)? = details["reason"]
        else { return nil }
        return reason
    }

    static func revision(_ client: TestClient) throws -> Int {
        guard case .int(let revision) = try client.get("/v1/stats", headers: admin)["revision"] else { return -1 }
        return revision
    }

    @Test("made, listed without its secret, changed and revoked by the admin only; bad input changes nothing")
    func lifecycle() throws {
        try Self.withWorld { _, client in
            let (id, scoped) = try Self.token(
                client, ["name": "alice", "scopes": Self.scopes, "ttl": 60, "client": "alice"])
            let listed = try client.get("/v1/tokens", headers: Self.admin)
            #expect(listed.status == 200 && listed.text.contains(id) && !listed.text.contains("obs_st_"))
            #expect(try client.get("/v1/tokens/\(id)", headers: Self.admin)["name"] == "alice")
            let changed = try client.send("PATCH", "/v1/tokens/\(id)", json: ["ttl": .null], headers: Self.admin)
            #expect(changed.status == 200 && changed["expiresAt"] == .null, "\(changed.text)")
            let before = try Self.revision(client)
            for body in [
                ["scopes": [["allow": ["read"]]]] as JSON, ["scopes": [["allow": ["jump"], "class": "Doc"]]],
                ["scopes": [["allow": ["read"], "ids": "a b"]]], ["scopes": Self.scopes, "ttl": 0],
                ["scopes": Self.scopes, "colour": "red"], ["scopes": []],
            ] {
                let refused = try client.send("POST", "/v1/tokens", json: body, headers: Self.admin)
                #expect(refused.status == 400 && refused.errorCode == "invalidRequest", "\(body): \(refused.text)")
            }
            for (method, path) in [("GET", "/v1/tokens"), ("POST", "/v1/tokens"), ("DELETE", "/v1/tokens/\(id)")] {
                let response = try client.send(method, path, json: ["scopes": Self.scopes], headers: scoped)
                #expect(response.status == 403, "\(method) \(path): \(response.text)")
            }
            #expect(try Self.revision(client) == before, "refusals take no revision")
            #expect(try client.delete("/v1/tokens/\(id)", headers: Self.admin).status == 204)
            let gone = try client.get("/v1/objects", headers: scoped)
            #expect(gone.status == 401 && Self.reason(gone) == "revoked", "\(gone.text)")
            #expect(try client.get("/v1/tokens/\(id)", headers: Self.admin).status == 404)
        }
    }

    @Test("a token's client names its writes; another Obs-Client is 403")
    func clientBinding() throws {
        try Self.withWorld { server, client in
            let (_, scoped) = try Self.token(client, ["scopes": Self.scopes, "client": "alice"])
            let admin = try server.stream(nil, headers: Self.admin)
            var wrong = scoped
            wrong["Obs-Client"] = "mallory"
            #expect(
                try client.send("PUT", "/v1/objects/room1-a/values/title", json: ["value": "x"], headers: wrong)
                    .status == 403)
            #expect(
                try client.send("PUT", "/v1/objects/room1-a/values/title", json: ["value": "y"], headers: scoped)
                    .status == 200)
            var changed: SSEEvent?
            while changed == nil, let event = try admin.next(timeout: 2) {
                if event.name == "valueChanged" { changed = event }
            }
            #expect(changed?["by"] == "alice", "\(String(describing: changed))")
        }
    }

    @Test("streams opened with a token end with revoked within a second of its revocation: SSE, NDJSON, a waiting poll")
    func revocationEndsStreams() throws {
        try Self.withWorld { server, client in
            let (id, scoped) = try Self.token(client)
            let made = try client.send("POST", "/v1/observers", json: [:], headers: scoped)
            guard case .string(let observer) = made["id"], case .string(let own) = made["token"] else {
                throw TestClientError("no observer: \(made.text)")
            }
            #expect(made["tokenId"] == .string(id))
            let sse = try server.stream(observer, headers: scoped)
            let ndjson = try server.stream(
                observer, headers: scoped.merging(["Accept": "application/x-ndjson"]) { $1 })
            let viaObserverToken = try server.stream(observer, query: "?access_token=\(own)")
            let admins = try server.stream(observer, headers: Self.admin)
            let polled = Locked<TestResponse?>(nil)
            let port = server.port
            let thread = Thread {
                let poll = TestClient(port: port)
                defer { poll.close() }
                let answer = try? poll.get(
                    "/v1/observers/\(observer)/events?wait=30",
                    headers: scoped.merging(["Accept": "application/json"]) { $1 })
                polled.withLock { $0 = answer }
            }
            thread.start()
            Thread.sleep(forTimeInterval: 0.3)  // the poll is waiting
            let start = Date()
            #expect(try client.delete("/v1/tokens/\(id)", headers: Self.admin).status == 204)
            for stream in [sse, ndjson, viaObserverToken] {
                let events = try stream.drainUntilClosed(timeout: 2)
                #expect(events.last?.name == "revoked", "\(events)")
                #expect(events.last?["reason"] == "revoked" && events.last?["token"] == .string(id))
                #expect(stream.closed)
            }
            while polled.withLock({ $0 }) == nil, Date().timeIntervalSince(start) < 2 {
                Thread.sleep(forTimeInterval: 0.01)
            }
            #expect(
                Date().timeIntervalSince(start) < 1, "ended \(Date().timeIntervalSince(start)) s after the revocation")
            let answer = try #require(polled.withLock { $0 })
            #expect(answer.status == 200 && answer.text.contains(#""event":"revoked""#), "\(answer.text)")
            // The admin's stream of the same observer goes on; the observer stays.
            let stays = try client.get("/v1/observers/\(observer)", headers: Self.admin)
            #expect(!admins.closed && stays.status == 200)
            let own401 = try client.get("/v1/observers/\(observer)", headers: ["Authorization": "Bearer \(own)"])
            #expect(own401.status == 401 && Self.reason(own401) == "revoked")
        }
    }

    @Test("a token that expires (ttl) ends its streams within a second; PATCH ttl moves the expiry")
    func expiryEndsStreams() throws {
        try Self.withWorld { server, client in
            let (id, scoped) = try Self.token(client, ["scopes": Self.scopes, "ttl": 1])
            let observer = try client.send("POST", "/v1/observers", json: [:], headers: scoped)
            guard case .string(let observerID) = observer["id"] else { return }
            let stream = try server.stream(observerID, headers: scoped)
            let events = try stream.drainUntilClosed(timeout: 3)
            #expect(events.last?.name == "revoked" && events.last?["reason"] == "expired", "\(events)")
            let expired = try client.get("/v1/objects", headers: scoped)
            #expect(expired.status == 401 && Self.reason(expired) == "expired")
            #expect(try client.get("/v1/tokens/\(id)", headers: Self.admin).status == 404)
            // A later expiry, set before the first: the token outlives its first ttl.
            let (other, longer) = try Self.token(client, ["scopes": Self.scopes, "ttl": 1])
            #expect(
                try client.send("PATCH", "/v1/tokens/\(other)", json: ["ttl": 60], headers: Self.admin).status == 200)
            Thread.sleep(forTimeInterval: 1.3)
            #expect(try client.get("/v1/objects", headers: longer).status == 200)
        }
    }

    @Test("a JWT is a scoped token: its scopes, its sub as client, revocable by jti, its streams end at exp")
    func jwt() throws {
        try Self.withWorld { server, client in
            let signer = JWTSigner(secret: Self.jwtSecret)
            let now = Int(Date().timeIntervalSince1970)
            func jwt(_ claims: JSONObject) throws -> [String: String] {
                ["Authorization": "Bearer \(try signer.token(.object(claims)))"]
            }
            let claims: JSONObject = ["exp": .int(now + 2), "sub": "bob", "jti": "j-1", "obs": ["scopes": Self.scopes]]
            let bob = try jwt(claims)
            let listed = try client.get("/v1/objects", headers: bob)
            #expect(listed.status == 200 && !listed.text.contains("room2-a") && listed.text.contains("room1-a"))
            #expect(
                try client.send("PUT", "/v1/objects/room2-a/values/title", json: ["value": "x"], headers: bob).status
                    == 403)
            let made = try client.send("POST", "/v1/observers", json: [:], headers: bob)
            #expect(made.status == 201 && made["client"] == "bob" && made["tokenId"] == "j-1", "\(made.text)")
            guard case .string(let observer) = made["id"] else { return }
            let stream = try server.stream(observer, headers: bob)
            let events = try stream.drainUntilClosed(timeout: 4)
            #expect(events.last?.name == "revoked" && events.last?["reason"] == "expired", "\(events)")
            // Revocation by jti, of a JWT the server never stored.
            var revocable = claims
            revocable["exp"] = .int(now + 600)
            revocable["jti"] = "j-2"
            let carol = try jwt(revocable)
            #expect(try client.get("/v1/objects", headers: carol).status == 200)
            #expect(try client.delete("/v1/tokens/j-2", headers: Self.admin).status == 204)
            let revoked = try client.get("/v1/objects", headers: carol)
            #expect(revoked.status == 401 && Self.reason(revoked) == "revoked")
            // Flawed JWTs: 401 with the reason.
            var late = revocable
            late["exp"] = .int(now + 90_000)
            var noScopes = revocable
            noScopes["obs"] = [:]
            for (headers, reason) in [
                (try jwt(late), "expiryTooLate"), (try jwt(noScopes), "scopes"),
                (
                    [
                        "Authorization":
                            "Bearer \(try JWTSigner(secret: String(repeating: "x", count: 40)).token(.object(revocable)))"
                    ], "signature"
                ),
            ] {
                let refused = try client.get("/v1/objects", headers: headers)
                #expect(refused.status == 401 && Self.reason(refused) == reason, "\(refused.text)")
            }
        }
    }

    @Test("the algorithm comes from the key: an HS256 token keyed with the RSA public key is refused")
    func algorithmConfusion() throws {
        let rsa = try JWTSigner(algorithm: "RS256", genpkey: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
        let file = NSTemporaryDirectory() + "obs-jwt-\(UUID().uuidString).pem"
        try (rsa.publicPEM ?? "").write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try withServer(configure: {
            $0.token = "admin-secret"
            $0.jwtPublicKey = file
        }) { _, client in
            let exp = Int(Date().timeIntervalSince1970) + 60
            let claims: JSON = ["exp": .int(exp), "obs": ["scopes": Self.scopes]]
            #expect(
                try client.get("/v1/objects", headers: ["Authorization": "Bearer \(try rsa.token(claims))"]).status
                    == 200)
            let forged = try JWTSigner(secret: (rsa.publicPEM ?? "")).token(claims)
            let refused = try client.get("/v1/objects", headers: ["Authorization": "Bearer \(forged)"])
            #expect(refused.status == 401 && Self.reason(refused) == "algorithm", "\(refused.text)")
        }
    }

    @Test("tokens and what they made survive a restart of a durable server")
    func durable() throws {
        let directory = try TemporaryDirectory()
        let (tokenID, secret) = try withServer(configure: {
            $0.token = "admin-secret"
            $0.dataDir = directory.path
        }) { _, client -> (String, String) in
            let created = try client.send("POST", "/v1/tokens", json: ["scopes": Self.scopes], headers: Self.admin)
            guard case .string(let id) = created["id"], case .string(let token) = created["token"] else {
                throw TestClientError("no token: \(created.text)")
            }
            #expect(try client.send("POST", "/v1/objects", json: ["id": "room1-z"], headers: Self.admin).status == 201)
            return (id, token)
        }
        try withServer(configure: {
            $0.token = "admin-secret"
            $0.dataDir = directory.path
        }) { _, client throws in
            let scoped = ["Authorization": "Bearer \(secret)"]
            #expect(try client.get("/v1/tokens/\(tokenID)", headers: Self.admin).status == 200)
            #expect(try client.get("/v1/objects", headers: scoped).status == 200)
            #expect(try client.delete("/v1/tokens/\(tokenID)", headers: Self.admin).status == 204)
        }
        try withServer(configure: {
            $0.token = "admin-secret"
            $0.dataDir = directory.path
        }) { _, client throws in
            let refused = try client.get("/v1/objects", headers: ["Authorization": "Bearer \(secret)"])
            #expect(refused.status == 401 && Self.reason(refused) == "revoked")
        }
    }
}
