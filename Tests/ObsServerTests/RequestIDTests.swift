import Logging
import ObservationCore
import Testing

@testable import ObsServer

@Suite("Request ids")
struct RequestIDTests {
    /// A server whose log lines (JSON, debug level: one per answered request) are collected.
    private final class LoggedServer {
        let server: Server
        let port: UInt16
        let lines = Locked<[[UInt8]]>([])

        init(maxBodyBytes: Int = 1 << 20) throws {
            var config = ServerConfig()
            config.port = 0
            config.maxBodyBytes = maxBodyBytes
            config.threads = 2
            config.publicDir = "Public"
            let lines = self.lines
            var logger = Logger(label: "obs-server") { label in
                var handler = JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
                handler.logLevel = .debug
                return handler
            }
            logger.logLevel = .debug
            server = try Server(config: config, logger: logger)
            port = try server.start()
        }

        deinit { server.stop() }

        /// The log lines that carry `requestId` `id`.
        func lines(for id: String) -> [JSONObject] {
            lines.withLock { $0 }.compactMap { line in
                guard case .object(let members)? = try? JSONParser.parse(line.dropLast()),
                    members["requestId"] == .string(id)
                else { return nil }
                return members
            }
        }
    }

    @Test("a made id is the process's eight hex digits, a dash, then the counter in at least six")
    func madeIDFormat() throws {
        let (first, second) = (RequestID.make(), RequestID.make())
        for id in [first, second] {
            let parts = id.split(separator: "-", omittingEmptySubsequences: false)
            #expect(parts.count == 2 && parts[0].count == 8 && parts[1].count >= 6, "\(id)")
            #expect(id.utf8.allSatisfy { Array("0123456789abcdef-".utf8).contains($0) }, "\(id)")
        }
        #expect(first.prefix(9) == second.prefix(9))
        let counters = try [first, second].map { try #require(UInt64($0.dropFirst(9), radix: 16)) }
        #expect(counters[1] > counters[0], "\(first) then \(second)")
    }

    @Test("a client's X-Request-Id comes back in the answer and in the request's log line")
    func clientID() throws {
        let server = try LoggedServer()
        let client = TestClient(port: server.port)
        defer { client.close() }
        let response = try client.send(
            "POST", "/v1/objects", json: ["id": "a"], headers: ["X-Request-Id": "trace-42/a.b"])
        #expect(response.status == 201)
        #expect(response.headers["x-request-id"] == "trace-42/a.b")
        let logged = server.lines(for: "trace-42/a.b")
        try #require(logged.count == 1)
        #expect(logged[0]["message"] == "POST /v1/objects 201")
        #expect(logged[0]["level"] == "debug")
        #expect(logged[0]["status"] == "201")
        #expect(logged[0]["route"] == "POST /v1/objects")
    }

    @Test("without one (or with one that is not usable), the server makes a new id for each request")
    func madeIDs() throws {
        let server = try LoggedServer()
        let client = TestClient(port: server.port)
        defer { client.close() }
        var ids: Set<String> = []
        for headers in [[:], [:], ["X-Request-Id": "has space"], ["X-Request-Id": String(repeating: "x", count: 129)]] {
            let response = try client.get("/healthz", headers: headers)
            let id = try #require(response.headers["x-request-id"])
            #expect(id != headers["X-Request-Id"])
            #expect(id.count == 15 && id.allSatisfy { $0.isHexDigit || $0 == "-" }, "\(id)")
            #expect(server.lines(for: id).count == 1)
            ids.insert(id)
        }
        #expect(ids.count == 4)
        let longest = String(repeating: "y", count: RequestID.maxBytes)
        #expect(try client.get("/healthz", headers: ["X-Request-Id": longest]).headers["x-request-id"] == longest)
    }

    @Test("errors, static files and event streams carry the id too; a log line names the observer")
    func everyAnswer() throws {
        let server = try LoggedServer()
        let client = TestClient(port: server.port)
        defer { client.close() }
        let missing = try client.get("/v1/objects/none", headers: ["X-Request-Id": "e-404"])
        #expect(missing.status == 404 && missing.headers["x-request-id"] == "e-404")
        let page = try client.get("/", headers: ["X-Request-Id": "page"])
        #expect(page.status == 200 && page.headers["x-request-id"] == "page")
        let observer = try client.send("POST", "/v1/observers", json: [:])
        guard case .string(let id) = observer["id"] else { throw CancellationError() }
        let stream = try SSEClient(
            port: server.port, path: "/v1/observers/\(id)/events", headers: ["X-Request-Id": "stream-1"])
        defer { stream.close() }
        #expect(stream.headerLines.contains("x-request-id: stream-1"))
        let logged = server.lines(for: "stream-1")
        try #require(logged.count == 1)
        #expect(logged[0]["observer"] == .string(id))
    }

    @Test("a body announced over the limit is refused with the id before it is read")
    func earlyRefusal() throws {
        // A small limit and a body the socket takes whole: the server answers before reading it
        // and closes, and a bigger body's send would fail before the answer is read.
        let server = try LoggedServer(maxBodyBytes: 1000)
        let client = TestClient(port: server.port)
        defer { client.close() }
        let big = [UInt8](repeating: UInt8(ascii: " "), count: 5000)
        let response = try client.send("POST", "/v1/objects", body: big, headers: ["X-Request-Id": "too-big"])
        #expect(response.status == 413 && response.headers["x-request-id"] == "too-big")
    }
}
