import Foundation
import Testing

@testable import ObsServer
@testable import ObservationCore

#if canImport(Glibc)
    import Glibc
#endif

/// A poll's answer as the client reads it: its elements as events, `lastEventId`, `rebuildAfter`.
struct PollResult {
    let response: TestResponse
    var events: [SSEEvent] = []
    var lastEventID: Int?
    var rebuildAfter: Int?

    init(_ response: TestResponse) {
        self.response = response
        if case .array(let elements) = response["events"] {
            events = elements.map { element in
                guard case .object(let members) = element, case .string(let name)? = members["event"] else {
                    return SSEEvent(name: "malformed")
                }
                var event = SSEEvent(name: name)
                if case .int(let id)? = members["id"] { event.id = id }
                if let data = members["data"] { event.data = String(decoding: data.encoded(), as: UTF8.self) }
                return event
            }
        }
        if case .int(let last) = response["lastEventId"] { lastEventID = last }
        if case .int(let after) = response["rebuildAfter"] { rebuildAfter = after }
    }
}

extension TestClient {
    /// `GET path` with `Accept: application/json`: a poll; requires 200.
    func poll(_ path: String) throws -> PollResult {
        let response = try get(path, headers: ["Accept": "application/json"])
        #expect(response.status == 200, "\(response.text)")
        #expect(response.headers["content-type"] == "application/json; charset=utf-8")
        return PollResult(response)
    }
}

/// Runs `body` on another thread; `wait()` returns its result (a poll that waits, while the
/// test goes on).
final class Background<T: Sendable>: Sendable {
    private let result = Locked<Result<T, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () throws -> T) {
        Thread { [result, done] in
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
            done.signal()
        }.start()
    }

    func wait(timeout: TimeInterval = 15) throws -> T {
        guard done.wait(timeout: .now() + timeout) == .success, let outcome = result.withLock({ $0 }) else {
            throw TestClientError("no result within \(timeout) s")
        }
        return try outcome.get()
    }
}

/// Section 7.2's polling: `GET …/events?after=n&wait=s&limit=k` with `Accept: application/json`
/// reads the buffer the streams read, with the same resume rules, and waits without a loop.
@Suite("Event streams: polling")
struct PollingTests {
    func path(_ observer: String?, _ query: String) -> String {
        (observer.map { "/v1/observers/\($0)/events" } ?? "/v1/events") + query
    }

    /// The observer's `streams` count.
    func streams(_ client: TestClient, _ observer: String) throws -> JSON {
        try client.get("/v1/observers/\(observer)")["streams"]
    }

    /// Waits until the observer counts `count` streams (waiting polls included); false after
    /// `limit` seconds. The bound is generous: under ThreadSanitizer, with every suite running
    /// at once on two cores, a poll has taken more than 3 s to reach its handler.
    func awaitStreams(_ client: TestClient, _ observer: String, _ count: Int, within limit: TimeInterval = 20)
        throws -> Bool
    {
        let deadline = Date().addingTimeInterval(limit)
        while try streams(client, observer) != .int(count) {
            guard Date() < deadline else { return false }
            Thread.sleep(forTimeInterval: 0.02)
        }
        return true
    }

    @Test("NDJSON and polling agree event for event with SSE on the same observer, across a reset")
    func agreesWithStreams() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0, "m": 0])
            let id = try client.createObserver(["replay": 4])
            try client.observe(id, "a", "n")
            try client.observe(id, "a", "m", options: ["new"])
            for value in 1...6 { try client.set("a", "n", .int(value)) }
            // Event 2 has left the buffer (3–6 are held): a resume after 1 is a reset and a rebuild.
            let sse = try server.stream(id, headers: ["Last-Event-ID": "1"])
            let ndjson = try server.stream(id, headers: ["Last-Event-ID": "1", "Accept": "application/x-ndjson"])
            var expected = try sse.events(3)
            var lines = try ndjson.events(3)
            let first = try client.poll(path(id, "?after=1"))
            var polled = first.events
            #expect(first.lastEventID == 6, "the rebuild covers the log up to its last id")
            #expect(first.rebuildAfter == nil)
            try client.set("a", "n", 7)
            try client.set("a", "m", 8)
            expected += try sse.events(2)
            lines += try ndjson.events(2)
            let second = try client.poll(path(id, "?after=\(first.lastEventID ?? -1)"))
            polled += second.events
            #expect(second.lastEventID == 8)
            #expect(expected.map(\.name) == ["reset", "change", "change", "change", "change"])
            #expect(expected[0]["reason"] == "gap" && expected[1]["initial"] == true)
            for other in [lines, polled] {
                #expect(other.map(\.name) == expected.map(\.name))
                #expect(other.map(\.id) == expected.map(\.id))
                #expect(other.map(\.json) == expected.map(\.json))
            }
            #expect(try client.poll(path(id, "?after=8")).events.isEmpty, "no synced, nothing more")

            // Without a resume point: from the oldest event held, as a fresh stream.
            let fresh = try server.stream(id)
            let all = try fresh.events(4)
            #expect(try client.poll(path(id, "")).events.map(\.json) == all.map(\.json))
            #expect(all.map(\.id) == [5, 6, 7, 8])
        }
    }

    @Test("Accept is matched by media type in any letter case: a poll, NDJSON or SSE as it names them")
    func acceptInAnyCase() throws {
        try withServer { server, client in
            let id = try client.createObserver()
            let events = "/v1/observers/\(id)/events"
            let poll = try client.get(events, headers: ["Accept": "Application/JSON"])
            #expect(poll.status == 200 && poll.headers["content-type"]?.hasPrefix("application/json") == true)
            #expect(poll["lastEventId"] == 0)
            for (accept, type) in [
                ("TEXT/Event-Stream, application/json", "text/event-stream"),
                ("Application/X-NDJSON", "application/x-ndjson"),
                ("application/x-ndjson, Text/Event-Stream;q=0.5", "text/event-stream"),
                ("application/JSON, application/X-ndjson", "application/x-ndjson"),
            ] {
                let stream = try SSEClient(port: server.port, path: events, headers: ["Accept": accept], skipping: [])
                #expect(stream.headerLines.contains("content-type: \(type)"), "Accept: \(accept)")
            }
        }
    }

    @Test("the admin stream polls the same way: its own ids, and a reset without a rebuild")
    func adminPolls() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            try client.set("a", "n", 1)
            let stream = try server.stream(nil)
            let events = try stream.events(2)
            let polled = try client.poll(path(nil, "?after=0"))
            #expect(polled.events.map(\.id) == events.map(\.id))
            #expect(polled.events.map(\.json) == events.map(\.json))
            #expect(polled.lastEventID == events.last?.id)
            let unknown = try client.poll(path(nil, "?after=99&limit=5"))
            #expect(unknown.events.map(\.name) == ["reset"] && unknown.events[0]["reason"] == "unknown")
            #expect(unknown.events[0].id == nil && unknown.lastEventID == 2 && unknown.rebuildAfter == nil)
        }
    }

    @Test("limit: at most k events per answer (100 by default); lastEventId pages through without loss")
    func limit() throws {
        try withServer { _, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            for value in 1...105 { try client.set("a", "n", .int(value)) }
            let page = try client.poll(path(id, "?after=0"))
            #expect(page.events.count == 100 && page.lastEventID == 100)
            var after = 0
            var ids: [Int] = []
            while true {
                let answer = try client.poll(path(id, "?after=\(after)&limit=7"))
                #expect(answer.events.count <= 7)
                guard let last = answer.lastEventID, !answer.events.isEmpty else {
                    #expect(answer.lastEventID == after, "nothing answered: lastEventId is after")
                    break
                }
                ids += answer.events.compactMap(\.id)
                after = last
            }
            #expect(ids == Array(1...105), "every event once, in order")
        }
    }

    @Test("a rebuild larger than limit comes in parts: rebuildAfter goes on, lastEventId stays the covered id")
    func rebuildInParts() throws {
        try withServer { server, client in
            let keys = ["a", "b", "c", "d", "e"]
            try client.createObject("o", values: ["a": 0, "b": 0, "c": 0, "d": 0, "e": 0])
            let id = try client.createObserver(["replay": 1])
            for key in keys { try client.observe(id, "o", key) }
            for key in keys { try client.set("o", key, 1) }
            let sse = try server.stream(id, headers: ["Last-Event-ID": "0"])
            let expected = try sse.events(6)
            let first = try client.poll(path(id, "?after=0&limit=3"))
            #expect(first.events.map(\.name) == ["reset", "change", "change"])
            #expect(first.lastEventID == 5)
            let rebuildAfter = try #require(first.rebuildAfter)
            let second = try client.poll(path(id, "?after=5&limit=2&rebuildAfter=\(rebuildAfter)"))
            #expect(second.events.count == 2 && second.lastEventID == 5 && second.events.allSatisfy { $0.id == nil })
            let more = try #require(second.rebuildAfter)
            let third = try client.poll(path(id, "?after=5&limit=2&rebuildAfter=\(more)"))
            #expect(third.events.count == 1 && third.rebuildAfter == nil && third.lastEventID == 5)
            let parts = first.events + second.events + third.events
            #expect(parts.map(\.json) == expected.map(\.json), "the stream's reset and rebuild, in parts")
            try client.set("o", "a", 2)
            #expect(try client.poll(path(id, "?after=5")).events.map(\.id) == [6], "then the log, after the covered id")
            let tiny = try client.poll(path(id, "?after=0&limit=1"))
            #expect(tiny.events.map(\.name) == ["reset"] && tiny.rebuildAfter == 0, "no room: the rebuild starts next")
        }
    }

    @Test("a waiting poll answers as soon as an event arrives, and counts as a stream while it waits")
    func waitEndsAtFirstEvent() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver(["lease": 1])
            try client.observe(id, "a", "n")
            let port = server.port
            let started = Date()
            let waiting = Background { try TestClient(port: port).poll("/v1/observers/\(id)/events?after=0&wait=20") }
            Thread.sleep(forTimeInterval: 1.5)
            #expect(try streams(client, id) == 1, "the waiting poll is a stream")
            #expect(try client.get("/v1/observers/\(id)").status == 200, "it holds the lease (1 s) while it waits")
            let written = Date()
            try client.set("a", "n", 1)
            let answer = try waiting.wait()
            #expect(Date().timeIntervalSince(written) < 1, "answered at once")
            #expect(Date().timeIntervalSince(started) < 5)
            #expect(answer.events.map(\.id) == [1] && answer.events[0]["new"] == 1 && answer.lastEventID == 1)
            #expect(try streams(client, id) == 0)
            #expect(try client.get("/v1/observers/\(id)")["expiresAt"] != .null, "the lease counts again")
        }
    }

    @Test("a wait that runs out answers no events and lastEventId = after; a barrier does not end it early")
    func waitRunsOut() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            try client.set("a", "n", 1)
            let started = Date()
            let wait0 = try client.poll(path(id, "?after=1"))
            #expect(wait0.events.isEmpty && wait0.lastEventID == 1 && Date().timeIntervalSince(started) < 0.5)
            #expect(try streams(client, id) == 0, "a poll without wait is a plain read")
            let port = server.port
            let progress = Background {
                Thread.sleep(forTimeInterval: 0.3)
                return try TestClient(port: port).send("POST", "/v1/observers/\(id)/progress").status
            }
            let before = Date()
            let empty = try client.poll(path(id, "?after=1&wait=1"))
            let waited = Date().timeIntervalSince(before)
            #expect(try progress.wait() == 200)
            #expect(empty.events.isEmpty && empty.lastEventID == 1)
            #expect(waited >= 0.95 && waited < 3, "waited \(waited) s")
        }
    }

    @Test(
        "bad parameters answer 400 invalidRequest and change nothing",
        arguments: [
            "?after=-1", "?after=abc", "?after=1.5", "?wait=61", "?wait=-1", "?wait=x", "?limit=0", "?limit=1001",
            "?limit=ten", "?rebuildAfter=0", "?after=0&rebuildAfter=-2",
        ])
    func badParameters(query: String) throws {
        try withServer { _, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            // With a wait, the checks come before the poll would count as a stream.
            let asked = query.contains("wait=") ? query : query + "&wait=1"
            for observer in [id, nil] {
                try expectRefused(client, 400, "invalidRequest", readBack: observer.map { "/v1/observers/\($0)" }) {
                    try client.get(path(observer, asked), headers: ["Accept": "application/json"])
                }
            }
            let unknown = try client.get(path("nobody", "?wait=1"), headers: ["Accept": "application/json"])
            #expect(unknown.status == 404 && unknown.errorCode == "notFound")
        }
    }

    @Test("a poll that may wait counts under --max-streams; one that does not is a plain read")
    func streamLimit() throws {
        try withServer(configure: { $0.maxStreams = 1 }) { server, client in
            let id = try client.createObserver()
            let stream = try server.stream(id)
            try expectRefused(client, 429, "limitExceeded", readBack: "/v1/observers/\(id)") {
                try client.get(path(id, "?wait=1"), headers: ["Accept": "application/json"])
            }
            #expect(try client.poll(path(id, "")).events.isEmpty)
            stream.close()
        }
    }

    @Test("a waiting poll whose client hangs up stops counting at once")
    func hangUp() throws {
        try withServer { server, client in
            let id = try client.createObserver()
            let socket = try connectLoopback(port: server.port)
            let request =
                "GET /v1/observers/\(id)/events?wait=30 HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n"
            _ = request.utf8CString.withUnsafeBufferPointer {
                Glibc.send(socket, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL))
            }
            try #require(try awaitStreams(client, id, 1), "the poll is waiting")
            Glibc.close(socket)
            let closed = Date()
            while try streams(client, id) != 0, Date() < closed.addingTimeInterval(3) {
                Thread.sleep(forTimeInterval: 0.02)
            }
            #expect(try streams(client, id) == 0)
            #expect(Date().timeIntervalSince(closed) < 1, "noticed within a second")
            #expect(try client.get("/v1/observers/\(id)")["expiresAt"] != .null)
        }
    }

    @Test("stopping the server answers waiting polls at once")
    func stopAnswers() throws {
        try withServer { server, client in
            let id = try client.createObserver()
            let port = server.port
            let waiting = Background { try TestClient(port: port).poll("/v1/observers/\(id)/events?after=0&wait=30") }
            try #require(try awaitStreams(client, id, 1), "the poll is waiting before the server stops")
            let stopping = Date()
            server.stop()
            let answer = try waiting.wait(timeout: 5)
            #expect(answer.events.isEmpty && answer.lastEventID == 0)
            #expect(Date().timeIntervalSince(stopping) < 2)
        }
    }
}
