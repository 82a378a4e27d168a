import ObservationCore
import Testing

@testable import ObsServer

/// Who may use a route under section 9, for one request.
private enum Presented: String, CaseIterable {
    case none, other, own, admin
}

@Suite("Tokens: every route × every kind of token")
struct TokenMatrixTests {
    @Test("no token 401; the service token everything; an observer token its own observer and reads, else 403")
    func matrix() throws {
        let endpoints = try withServer(configure: { $0.token = "admin-secret" }) { server, _ in
            server.server.router.endpoints
        }
        #expect(endpoints.count >= 30)
        for endpoint in endpoints {
            // A fresh server per route: a DELETE in one row must not change the next.
            try withServer(configure: { $0.token = "admin-secret" }) { server, client in
                let admin = ["Authorization": "Bearer admin-secret"]
                #expect(
                    try client.send("POST", "/v1/objects", json: ["id": "o1", "values": ["n": 1]], headers: admin)
                        .status == 201)
                #expect(
                    try client.send("PUT", "/v1/classes/C", json: ["properties": [:]], headers: admin).status == 201)
                let (own, ownToken) = try Self.observer(client, admin)
                let (_, otherToken) = try Self.observer(client, admin)
                let path = endpoint.pattern.replacingOccurrences(
                    of: "{id}", with: endpoint.pattern.hasPrefix("/v1/observers") ? own : "o1"
                )
                .replacingOccurrences(of: "{name}", with: "C").replacingOccurrences(of: "{keyPath}", with: "n")
                .replacingOccurrences(of: "{registration}", with: "reg_x")
                .replacingOccurrences(of: "{subscription}", with: "sub_x")
                .replacingOccurrences(of: "{query}", with: "qry_x")
                let open = endpoint.method == .get && endpoint.pattern == "/healthz"
                // Reads: GETs of objects and classes, and a one-shot query (section 12).
                let read =
                    (endpoint.method == .get && (path.hasPrefix("/v1/objects") || path.hasPrefix("/v1/classes")))
                    || (endpoint.method == .post && path == "/v1/query")
                let ownResource = path.hasPrefix("/v1/observers/\(own)")
                for presented in Presented.allCases {
                    let token: String? =
                        switch presented {
                        case .none: nil
                        case .other: otherToken
                        case .own: ownToken
                        case .admin: "admin-secret"
                        }
                    let status = try Self.status(server, client, endpoint.method.rawValue, path, token: token)
                    let expected: Set<Int>? =
                        switch presented {
                        case _ where open: nil
                        case .none: [401]
                        case .admin: nil
                        case .own: read || ownResource ? nil : [403]
                        case .other: read ? nil : [403]
                        }
                    if let expected {
                        #expect(expected.contains(status), "\(endpoint.method) \(path) with \(presented): \(status)")
                    } else {
                        #expect(
                            status != 401 && status != 403, "\(endpoint.method) \(path) with \(presented): \(status)")
                    }
                }
            }
        }
    }

    private static func observer(_ client: TestClient, _ admin: [String: String]) throws -> (String, String) {
        let created = try client.send("POST", "/v1/observers", json: [:], headers: admin)
        guard case .string(let id) = created["id"], case .string(let token) = created["token"] else {
            throw TestClientError("no observer: \(created.text)")
        }
        return (id, token)
    }

    /// The status of one request; event streams are opened and closed at once.
    private static func status(
        _ server: TestServer, _ client: TestClient, _ method: String, _ path: String, token: String?
    )
        throws -> Int
    {
        let headers = token.map { ["Authorization": "Bearer \($0)"] } ?? [:]
        if path.hasSuffix("/events") {
            let stream = try SSEClient(port: server.port, path: path, headers: headers)
            defer { stream.close() }
            return stream.status
        }
        let body: [UInt8] = ["POST", "PUT", "PATCH"].contains(method) ? Array("{}".utf8) : []
        var allHeaders = headers
        if !body.isEmpty { allHeaders["Content-Type"] = "application/json" }
        return try client.send(method, path, body: body, headers: allHeaders).status
    }
}
