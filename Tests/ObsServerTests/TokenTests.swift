import ObservationCore
import Testing

@testable import ObsServer

@Suite("Tokens (section 9)")
struct TokenTests {
    @Test("an observer's token grants its own observer and reads of objects and classes, nothing else")
    func observerTokens() throws {
        try withServer(configure: { $0.token = "admin-secret" }) { server, client in
            let admin = ["Authorization": "Bearer admin-secret"]
            #expect(try client.send("POST", "/v1/objects", json: ["id": "a"], headers: admin).status == 201)
            func createObserver() throws -> (String, [String: String]) {
                let created = try client.send("POST", "/v1/observers", json: [:], headers: admin)
                guard case .string(let id) = created["id"], case .string(let token) = created["token"] else {
                    throw TestClientError("no observer: \(created.text)")
                }
                return (id, ["Authorization": "Bearer \(token)"])
            }
            let (mine, myToken) = try createObserver()
            let (theirs, _) = try createObserver()
            #expect(try client.get("/v1/observers/\(mine)", headers: myToken).status == 200)
            #expect(
                try client.send(
                    "POST", "/v1/observers/\(mine)/observations",
                    json: ["object": "a", "keyPath": "x"], headers: myToken
                ).status == 201)
            #expect(try client.get("/v1/objects/a", headers: myToken).status == 200)
            #expect(try client.get("/v1/classes", headers: myToken).status == 200)
            for (method, path) in [
                ("GET", "/v1/observers/\(theirs)"), ("DELETE", "/v1/observers/\(theirs)"), ("GET", "/v1/observers"),
                ("POST", "/v1/observers"), ("PUT", "/v1/objects/a/values/x"), ("DELETE", "/v1/objects/a"),
                ("GET", "/v1/stats"),
            ] {
                let response = try client.send(method, path, body: Array("{}".utf8), headers: myToken)
                #expect(
                    response.status == 403 && response.errorCode == "forbidden", "\(method) \(path): \(response.text)")
            }
            #expect(try client.get("/v1/objects/a", headers: ["Authorization": "Bearer nobody"]).status == 401)
            #expect(try client.get("/v1/observers/\(theirs)", headers: admin).status == 200)
        }
    }

    @Test("event streams, and only they, accept ?access_token=")
    func accessTokenQuery() throws {
        try withServer(configure: { $0.token = "admin-secret" }) { server, client in
            let created = try client.send(
                "POST", "/v1/observers", json: [:], headers: ["Authorization": "Bearer admin-secret"])
            guard case .string(let id) = created["id"], case .string(let token) = created["token"] else { return }
            #expect(
                try SSEClient(port: server.port, path: "/v1/observers/\(id)/events?access_token=\(token)").status == 200
            )
            #expect(try SSEClient(port: server.port, path: "/v1/events?access_token=admin-secret").status == 200)
            #expect(try SSEClient(port: server.port, path: "/v1/events?access_token=\(token)").status == 403)
            #expect(try SSEClient(port: server.port, path: "/v1/observers/\(id)/events").status == 401)
            #expect(try client.get("/v1/observers/\(id)?access_token=\(token)").status == 401)
        }
    }
}
