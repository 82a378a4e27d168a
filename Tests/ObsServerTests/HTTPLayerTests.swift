import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("HTTP layer")
struct HTTPLayerTests {
    @Test("healthz answers ok as JSON")
    func healthz() throws {
        try withServer { _, client in
            let response = try client.get("/healthz")
            #expect(response.status == 200)
            #expect(response.json == ["status": "ok"])
            #expect(response.headers["content-type"] == "application/json; charset=utf-8")
        }
    }

    @Test("an unknown route answers 404 notFound as JSON")
    func unknownRoute() throws {
        try withServer { _, client in
            try expectRefused(client, 404, "notFound") { try client.get("/v1/nothing/here") }
            try expectRefused(client, 404, "notFound") { try client.get("/v1") }
        }
    }

    @Test("a wrong method answers 405 with an Allow header")
    func methodNotAllowed() throws {
        try withServer { _, client in
            let response = try expectRefused(client, 405, "methodNotAllowed") { try client.delete("/v1/objects") }
            #expect(response.headers["allow"] == "POST, GET")
            let put = try expectRefused(client, 405, "methodNotAllowed") { try client.send("POST", "/v1/classes/X") }
            #expect(put.headers["allow"]?.split(separator: ",").count == 3)
        }
    }

    @Test("one keep-alive connection serves many requests")
    func keepAlive() throws {
        try withServer { _, client in
            for index in 0..<200 {
                let response = try client.send("POST", "/v1/objects", json: ["id": .string("k\(index)")])
                #expect(response.status == 201)
                #expect(response.headers["connection"]?.lowercased() != "close")
            }
            #expect(try client.get("/v1/stats")["objects"] == 200)
        }
    }

    @Test("a body announced over the limit answers 413 before it is sent")
    func payloadTooLargeEarly() throws {
        try withServer(configure: { $0.maxBodyBytes = 1000 }) { _, client in
            let big = Array(repeating: UInt8(ascii: " "), count: 5000)
            try expectRefused(client, 413, "payloadTooLarge") { try client.send("POST", "/v1/objects", body: big) }
        }
    }

    @Test("a JSON string over --max-string-bytes answers 413 and changes nothing")
    func stringTooLong() throws {
        try withServer(configure: { $0.maxStringBytes = 100 }) { _, client in
            let long = JSON.string(String(repeating: "x", count: 101))
            try expectRefused(client, 413, "payloadTooLarge") {
                try client.send("POST", "/v1/objects", json: ["id": "a", "values": ["note": long]])
            }
            #expect(
                try client.send("POST", "/v1/objects", json: ["id": "a", "values": ["note": "short"]]).status == 201)
            try expectRefused(client, 413, "payloadTooLarge") {
                try client.send("PUT", "/v1/objects/a/values/note", json: ["value": long])
            }
            #expect(try client.get("/v1/objects/a/values/note")["value"] == "short")
        }
    }

    @Test("a chunked body that grows over the limit answers 413")
    func payloadTooLargeChunked() throws {
        try withServer(configure: { $0.maxBodyBytes = 1000 }) { server, client in
            let chunk = String(repeating: " ", count: 600)
            let request =
                "POST /v1/objects HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "258\r\n\(chunk)\r\n258\r\n\(chunk)\r\n0\r\n\r\n"
            let raw = server.client()
            let response = try raw.raw(Array(request.utf8))
            #expect(response.status == 413)
            #expect(response.errorCode == "payloadTooLarge")
            #expect(try client.get("/v1/stats")["objects"] == 0)
        }
    }

    @Test(
        "header names in any case; the first of a repeated header counts; a repeated query argument its last, decoded")
    func headerAndQueryFields() throws {
        try withServer { _, client in
            func create(_ id: String, _ headerLines: String) throws -> Int {
                let body = #"{"id":"\#(id)"}"#
                let head =
                    "POST /v1/objects HTTP/1.1\r\nHost: x\r\n\(headerLines)Content-Length: \(body.utf8.count)\r\n\r\n"
                return try client.raw(Array((head + body).utf8)).status
            }
            #expect(try create("a", "content-TYPE: Application/JSON\r\n") == 201)
            #expect(try create("b", "Content-Type: application/json\r\ncontent-type: text/plain\r\n") == 201)
            #expect(try create("c", "content-type: text/plain\r\nContent-Type: application/json\r\n") == 415)
            for id in ["d", "e", "f"] { _ = try client.createObject(id) }
            func page(_ query: String) throws -> [String] {
                guard case .object(let root) = try client.send("GET", "/v1/objects?" + query).json,
                    case .array(let objects)? = root["objects"]
                else { return [] }
                return objects.compactMap {
                    if case .object(let o) = $0, case .string(let id)? = o["id"] { id } else { nil }
                }
            }
            #expect(try page("limit=4&limit=%32") == ["a", "b"])
            #expect(try page("limit=2&limit=3").count == 3)
        }
    }

    @Test("a body that is not JSON by its Content-Type answers 415")
    func unsupportedMediaType() throws {
        try withServer { _, client in
            try expectRefused(client, 415, "unsupportedMediaType") {
                try client.send(
                    "POST", "/v1/objects", body: Array("id=x".utf8),
                    headers: ["Content-Type": "application/x-www-form-urlencoded"])
            }
        }
    }

    @Test(
        "JSON media types are application/json and +json, any case, parameters and blanks ignored",
        arguments: [
            ("application/json", true), ("application/json; charset=utf-8", true), (" Application/JSON\t", true),
            ("application/merge-patch+json", true), ("application/vnd.api+JSON;x=1", true),
            ("text/plain", false), ("application/jsonx", false), ("+json", false), ("json", false),
            ("application/json-seq", false), ("application/jsón", false), ("", false),
            // Bytes that `| 0x20` maps onto a non-letter of the name: only letters take either case.
            ("application\u{0F}json", false), ("application/vnd\u{0B}json", false),
        ])
    func jsonMediaTypes(contentType: String, isJSON: Bool) {
        #expect(JSONBody.isJSON(contentType) == isJSON)
    }

    @Test(
        "malformed JSON (a member name twice included) answers 400 invalidJSON with the offset",
        arguments: [
            "{", "{\"id\": }", "[1,]", "{\"id\": \"a\"} x", "nul", "{\"a\": 01}", "\"\\x\"", "{\"a\":\"\u{01}\"}",
            "{\"id\": \"a\", \"id\": \"b\"}", "{\"id\": \"a\", \"values\": {\"x\": 1, \"x\": 2}}",
        ])
    func invalidJSON(text: String) throws {
        try withServer { _, client in
            let response = try expectRefused(client, 400, "invalidJSON") {
                try client.send(
                    "POST", "/v1/objects", body: Array(text.utf8), headers: ["Content-Type": "application/json"])
            }
            guard case .object(let root) = response.json, case .object(let error)? = root["error"],
                case .object(let details)? = error["details"]
            else { Issue.record("no details"); return }
            #expect(details["offset"] != nil)
        }
    }

    @Test("JSON nested deeper than 64 levels answers 400 invalidJSON")
    func nestingLimit() throws {
        try withServer { _, client in
            try client.createObject("deep")
            let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
            try expectRefused(client, 400, "invalidJSON", readBack: "/v1/objects/deep") {
                try client.send("PUT", "/v1/objects/deep/values/a", body: Array("{\"value\": \(deep)}".utf8))
            }
        }
    }

    @Test("unknown body fields answer 400 invalidRequest with a suggestion")
    func unknownField() throws {
        try withServer { _, client in
            let response = try expectRefused(client, 400, "invalidRequest") {
                try client.send("POST", "/v1/objects", json: ["id": "a", "valeus": [:]])
            }
            #expect(response.text.contains("did you mean 'values'"))
        }
    }

    @Test("the dashboard is served at / and files cannot escape the public directory")
    func staticFiles() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("obs-public-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("<h1>dash</h1>".utf8).write(to: directory.appendingPathComponent("index.html"))
        try Data("export {}".utf8).write(to: directory.appendingPathComponent("app.js"))
        try withServer(configure: { $0.publicDir = directory.path }) { _, client in
            let index = try client.get("/")
            #expect(index.status == 200)
            #expect(index.text == "<h1>dash</h1>")
            #expect(index.headers["content-type"] == "text/html; charset=utf-8")
            #expect(try client.get("/app.js").headers["content-type"] == "text/javascript; charset=utf-8")
            #expect(try client.get("/../Package.swift").status == 404)
            #expect(try client.get("/%2e%2e/Package.swift").status == 404)
            #expect(try client.get("/missing.css").errorCode == "notFound")
        }
    }

    @Test("the JavaScript client is served at /client/obs.js, its types beside it")
    func javaScriptClient() throws {
        try withServer { _, client in
            let module = try client.get("/client/obs.js")
            #expect(module.status == 200 && module.headers["content-type"] == "text/javascript; charset=utf-8")
            #expect(module.text.contains("export class ObsClient"))
            let types = try client.get("/client/obs.d.ts")
            #expect(types.status == 200 && types.headers["content-type"] == "application/typescript; charset=utf-8")
        }
    }

    @Test("with --token, the API needs the bearer token and healthz stays open")
    func token() throws {
        try withServer(configure: { $0.token = "s3cret" }) { _, client in
            #expect(try client.get("/healthz").status == 200)
            let refused = try client.get("/v1/stats")
            #expect(refused.status == 401)
            #expect(refused.errorCode == "unauthorized")
            #expect(try client.get("/v1/stats", headers: ["Authorization": "Bearer wrong"]).status == 401)
            #expect(try client.get("/v1/stats", headers: ["Authorization": "Bearer s3cret"]).status == 200)
            let create = try client.send(
                "POST", "/v1/objects", json: ["id": "a"], headers: ["Authorization": "Bearer s3cret"])
            #expect(create.status == 201)
        }
    }

    @Test("--cluster excludes --data-dir, and a node id may not contain '#'")
    func clusterSettingsChecked() {
        var config = ServerConfig()
        config.cluster = "postgres://obs@127.0.0.1/obs"
        config.dataDir = "/tmp/obs-data"
        #expect(throws: ConfigError.self) { try config.validate() }
        config.dataDir = nil
        config.nodeID = "n1#2"
        #expect(throws: ConfigError.self) { try config.validate() }
        config.nodeID = "n1"
        #expect(throws: Never.self) { try config.validate() }
    }

    @Test("a non-loopback host without a token is refused at start unless --allow-open")
    func openHostRefused() throws {
        #expect(throws: (any Error).self) { try TestServer(configure: { $0.host = "0.0.0.0" }) }
        let server = try TestServer(configure: {
            $0.host = "0.0.0.0"; $0.allowOpen = true
        })
        server.stop()
    }
}
