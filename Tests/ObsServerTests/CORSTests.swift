import Foundation
import Testing

@testable import ObsServer
@testable import ObservationCore

/// Section 9's `--cors-origins`: preflights, `Access-Control-Allow-Origin` on every answer to
/// an allowed origin (errors and event streams too), nothing for other origins, nothing at all
/// without the option.
@Suite("CORS")
struct CORSTests {
    static let origin = "https://app.example"

    /// The `access-control-*` headers of an answer.
    func corsHeaders(_ response: TestResponse) -> [String: String] {
        response.headers.filter { $0.key.hasPrefix("access-control-") }
    }

    func preflight(_ client: TestClient, _ path: String, origin: String = origin) throws -> TestResponse {
        try client.send(
            "OPTIONS", path,
            headers: [
                "Origin": origin, "Access-Control-Request-Method": "PUT",
                "Access-Control-Request-Headers": "content-type, authorization",
            ])
    }

    /// Checks the headers every answer to an allowed origin carries.
    func expectAllowed(
        _ headers: [String: String], origin: String = origin, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(headers["access-control-allow-origin"] == origin, sourceLocation: sourceLocation)
        let exposed = Set(
            (headers["access-control-expose-headers"] ?? "").split(separator: ",").map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            })
        #expect(
            exposed.isSuperset(of: ["obs-client", "idempotent-replayed", "retry-after"]), "\(exposed)",
            sourceLocation: sourceLocation)
    }

    @Test("without --cors-origins: no CORS header at all, and OPTIONS answers as it always did")
    func off() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 1])
            let answer = try client.get("/v1/objects/a", headers: ["Origin": Self.origin])
            #expect(answer.status == 200 && corsHeaders(answer).isEmpty && answer.headers["vary"] == nil)
            let options = try preflight(client, "/v1/objects/a")
            #expect(options.status == 405 && options.errorCode == "methodNotAllowed")
            #expect(corsHeaders(options).isEmpty && options.headers["vary"] == nil)
            let stream = try server.stream(nil, headers: ["Origin": Self.origin])
            #expect(!stream.headerLines.contains { $0.hasPrefix("access-control-") })
        }
    }

    @Test(
        "a preflight from a listed origin: 204 with the methods, the headers clients send and a max-age; no token needed"
    )
    func preflightAnswered() throws {
        try withServer(configure: {
            $0.corsOrigins = [Self.origin, "http://localhost:3000"]
            $0.token = "secret"
        }) { _, client in
            for path in ["/v1/objects/a", "/v1/observers/x/events", "/v1/no-such-route"] {
                let answer = try preflight(client, path)
                #expect(answer.status == 204, "\(path): \(answer.text)")
                expectAllowed(answer.headers)
                #expect(answer.headers["vary"] == "Origin")
                let methods = answer.headers["access-control-allow-methods"] ?? ""
                for method in ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"] {
                    #expect(methods.contains(method), "\(methods)")
                }
                let allowed = Set(
                    (answer.headers["access-control-allow-headers"] ?? "").split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces).lowercased()
                    })
                #expect(
                    allowed.isSuperset(of: [
                        "authorization", "content-type", "last-event-id", "obs-client", "idempotency-key",
                    ]))
                #expect(Int(answer.headers["access-control-max-age"] ?? "") ?? 0 > 0)
            }
            let other = try preflight(client, "/v1/objects/a", origin: "http://localhost:3000")
            #expect(other.headers["access-control-allow-origin"] == "http://localhost:3000")
            // OPTIONS that is not a preflight (no Access-Control-Request-Method) answers as before.
            let plain = try client.send(
                "OPTIONS", "/v1/objects/a", headers: ["Origin": Self.origin, "Authorization": "Bearer secret"])
            #expect(plain.status == 405)
        }
    }

    @Test(
        "answers to a listed origin carry Allow-Origin, Expose-Headers and Vary: Origin: errors, streams and polls too")
    func answersAllowed() throws {
        try withServer(configure: {
            $0.corsOrigins = [Self.origin]
            $0.token = "secret"
            $0.maxBodyBytes = 1024
        }) { server, client in
            let headers = ["Origin": Self.origin, "Authorization": "Bearer secret"]
            let created = try client.send(
                "POST", "/v1/objects", json: ["id": "a", "values": ["n": 1]], headers: headers)
            #expect(created.status == 201)
            expectAllowed(created.headers)
            #expect(created.headers["vary"] == "Origin")
            let observer = try client.send("POST", "/v1/observers", json: [:], headers: headers)
            guard case .string(let id) = observer["id"] else { throw TestClientError("no observer: \(observer.text)") }
            let answers = [
                try client.get("/v1/objects/a", headers: headers),
                try client.get("/v1/objects/missing", headers: headers),  // 404
                try client.get("/v1/objects/a", headers: ["Origin": Self.origin]),  // 401
                try client.send("PUT", "/v1/objects/a", json: ["values": 1], headers: headers),  // 405
                try client.get(
                    "/v1/observers/\(id)/events?after=0",
                    headers: headers.merging(["Accept": "application/json"]) { $1 }),
                try client.get("/healthz", headers: ["Origin": Self.origin]),
                // Refused by the daemon itself, before the body is read (the connection closes after).
                try client.send("POST", "/v1/objects", body: Array(repeating: 32, count: 2048), headers: headers),
            ]
            #expect(answers.map(\.status) == [200, 404, 401, 405, 200, 200, 413])
            for answer in answers { expectAllowed(answer.headers) }
            let stream = try SSEClient(
                port: server.port, path: "/v1/observers/\(id)/events?access_token=secret",
                headers: ["Origin": Self.origin])
            #expect(stream.status == 200)
            #expect(stream.headerLines.contains("access-control-allow-origin: \(Self.origin)"))
            #expect(stream.headerLines.contains("vary: origin"))
            // The origin is compared without regard to case, as origins are.
            let upper = try client.get("/healthz", headers: ["Origin": "HTTPS://APP.EXAMPLE"])
            #expect(upper.headers["access-control-allow-origin"] == "HTTPS://APP.EXAMPLE")
        }
    }

    @Test("an origin not in the list gets no CORS header; its preflight answers as OPTIONS always did")
    func otherOriginRefused() throws {
        try withServer(configure: { $0.corsOrigins = [Self.origin] }) { server, client in
            try client.createObject("a", values: ["n": 1])
            for origin in ["https://evil.example", "https://app.example.evil", "http://app.example", "null"] {
                let answer = try client.get("/v1/objects/a", headers: ["Origin": origin])
                #expect(answer.status == 200 && corsHeaders(answer).isEmpty, "\(origin)")
                #expect(answer.headers["vary"] == "Origin", "the answer depends on the origin: caches must know")
                let options = try preflight(client, "/v1/objects/a", origin: origin)
                #expect(options.status == 405 && corsHeaders(options).isEmpty, "\(origin)")
            }
            let noOrigin = try client.get("/v1/objects/a")
            #expect(corsHeaders(noOrigin).isEmpty)
            let stream = try server.stream(nil, headers: ["Origin": "https://evil.example"])
            #expect(!stream.headerLines.contains { $0.hasPrefix("access-control-") })
        }
    }

    @Test("* lets every origin in: Allow-Origin * on every answer, no Vary")
    func anyOrigin() throws {
        try withServer(configure: { $0.corsOrigins = ["*"] }) { _, client in
            for origin in ["https://anything.example", "null", nil] {
                let answer = try client.get("/v1/stats", headers: origin.map { ["Origin": $0] } ?? [:])
                expectAllowed(answer.headers, origin: "*")
                #expect(answer.headers["vary"] == nil)
            }
            let options = try preflight(client, "/v1/objects/a", origin: "https://anything.example")
            #expect(options.status == 204 && options.headers["access-control-allow-origin"] == "*")
        }
    }

    @Test(
        "--cors-origins and OBS_CORS_ORIGINS take a list or *; anything else is refused at start",
        arguments: [
            (["--cors-origins", "https://a.example, http://localhost:3000"], [:], true),
            ([], ["OBS_CORS_ORIGINS": "*"], true),
            ([], ["OBS_CORS_ORIGINS": "http://[::1]:8080,"], true),
            (["--cors-origins", "https://a.example/"], [:], false),
            (["--cors-origins", "*,https://a.example"], [:], false),
            (["--cors-origins", "a.example"], [:], false),
            (["--cors-origins", "https://*.example"], [:], false),
            (["--cors-origins", ","], [:], false),
        ] as [([String], [String: String], Bool)])
    func configuration(arguments: [String], environment: [String: String], valid: Bool) throws {
        let command = try ObsServerCommand.parse(arguments)
        if valid {
            let config = try command.makeConfig(environment: environment)
            #expect(config.cors != nil && !config.corsOrigins.isEmpty)
        } else {
            #expect(throws: (any Error).self) { try command.makeConfig(environment: environment) }
        }
        #expect(try ObsServerCommand.parse([]).makeConfig(environment: [:]).cors == nil, "off by default")
    }
}
