import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("OpenAPI document and /metrics")
struct OpenAPITests {
    @Test("/openapi.json is served without a token and lists exactly the routes the router knows")
    func documentMatchesRouter() throws {
        try withServer(configure: { $0.token = "admin-secret" }) { server, client in
            let response = try client.get("/openapi.json")
            #expect(response.status == 200)
            guard case .object(let paths) = response["paths"], response["openapi"] == "3.1.0" else {
                Issue.record("not an OpenAPI 3.1 document: \(response.text.prefix(200))")
                return
            }
            var documented = Set<String>()
            for (path, item) in paths {
                guard case .object(let operations) = item else { continue }
                for method in operations.keys where method != "parameters" {
                    documented.insert("\(method.uppercased()) \(path)")
                }
            }
            let routed = Set(server.server.router.endpoints.map { "\($0.method) \($0.pattern)" })
            #expect(routed.subtracting(documented).isEmpty, "routes missing from the document")
            #expect(documented.subtracting(routed).isEmpty, "documented operations no route answers")
        }
    }

    @Test("the document's error codes include every code the core answers with, and a write documents 504")
    func errorCodes() throws {
        try withServer { _, client in
            let document = try client.get("/openapi.json").json
            let error = Self.member(document, "components", "schemas", "Error", "properties", "error")
            guard case .array(let codes)? = error.flatMap({ Self.member($0, "properties", "code", "enum") }) else {
                Issue.record("no Error schema with a code enum")
                return
            }
            let documented = Set(codes.compactMap { if case .string(let code) = $0 { code } else { nil } })
            let answered = Set(CoreError.Code.allCases.map(\.rawValue))
            #expect(answered.subtracting(documented).isEmpty, "codes missing from the document")
            let put = Self.member(document, "paths", "/v1/objects/{id}/values/{keyPath}", "put", "responses", "504")
            #expect(put != nil, "a cluster write may answer 504 outcomeUnknown")
        }
    }

    /// The value at `path` (object members), if every step is there.
    static func member(_ json: JSON, _ path: String...) -> JSON? {
        var current = json
        for key in path {
            guard case .object(let members) = current, let next = members[key] else { return nil }
            current = next
        }
        return current
    }

    @Test("/metrics: Prometheus text with the counts and a latency histogram per route")
    func metrics() throws {
        try withServer { _, client in
            try client.createObject("a", values: ["n": 1])
            _ = try client.get("/v1/objects/a")
            _ = try client.get("/v1/objects/missing")
            let response = try client.get("/metrics")
            #expect(response.status == 200)
            #expect(response.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = response.text
            #expect(text.contains("\nobs_objects 1\n"))
            #expect(text.contains("# TYPE obs_http_request_duration_seconds histogram"))
            #expect(text.contains("obs_http_request_duration_seconds_count{route=\"GET /v1/objects/{id}\"} 2"))
            #expect(text.contains("obs_http_responses_total{route=\"GET /v1/objects/{id}\",status=\"404\"} 1"))
            #expect(text.contains("obs_http_request_duration_seconds_bucket{route=\"POST /v1/objects\",le=\"+Inf\"} 1"))
        }
    }
}
