import Foundation
import Testing

@testable import ObsServer
@testable import ObservationCore

/// Section 7.2: what real clients need from a stream besides its events: `synced`, `reset`
/// for ids never made, `commit`, `progress` (idle and as a barrier), `retry:`, the headers
/// that keep proxies from buffering, and NDJSON on the same cursor.
@Suite("Event streams: options for real clients")
struct StreamOptionTests {
    @Test("synced follows the replay on a fresh connect, then live events; retry: and the no-buffering headers")
    func syncedOnConnect() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            for value in 1...3 { try client.set("a", "n", .int(value)) }
            let revision = try client.get("/v1/stats")["revision"]
            let stream = try SSEClient(port: server.port, path: "/v1/observers/\(id)/events", skipping: [])
            let events = try stream.events(4)
            #expect(events.map(\.name) == ["change", "change", "change", "synced"])
            #expect(events[3].id == nil && events[3]["lastEventId"] == 3 && events[3]["revision"] == revision)
            try client.set("a", "n", 4)
            #expect(try stream.next()?.id == 4, "live after synced")
            #expect(stream.retries.count == 1 && (2_000...5_000).contains(stream.retries[0]))
            #expect(stream.headerLines.contains("cache-control: no-store"))
            #expect(stream.headerLines.contains("x-accel-buffering: no"))

            let empty = try SSEClient(port: server.port, path: "/v1/events?lastEventId=0", skipping: [])
            let admin = try empty.events(8).last
            #expect(admin?.name == "synced", "the admin stream too")
        }
    }

    @Test("retry: is chosen at random per stream, spread over 2–5 s")
    func retrySpread() {
        let draws = (0..<3_000).map { _ in RetrySpread.next(in: 2_000...5_000) }
        #expect(draws.allSatisfy { (2_000...5_000).contains($0) })
        // Ten 300 ms bands: each gets about 300 of 3,000 draws; a fixed or clustered choice fails.
        let bands = Dictionary(grouping: draws) { min(($0 - 2_000) / 300, 9) }.mapValues(\.count)
        #expect(bands.count == 10 && bands.values.allSatisfy { (200...400).contains($0) }, "\(bands)")
        #expect(Set(draws).count > 1_500, "not a short cycle")
    }

    @Test("synced after a resume names the last event replayed; after a reset rebuild, the resume point")
    func syncedAfterResumeAndReset() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver(["replay": 3])
            try client.observe(id, "a", "n")
            for value in 1...2 { try client.set("a", "n", .int(value)) }
            let resumed = try SSEClient(
                port: server.port, path: "/v1/observers/\(id)/events", headers: ["Last-Event-ID": "1"], skipping: [])
            let replay = try resumed.events(2)
            #expect(replay.map(\.name) == ["change", "synced"] && replay[0].id == 2)
            #expect(replay[1]["lastEventId"] == 2)
            let nothingMissed = try SSEClient(
                port: server.port, path: "/v1/observers/\(id)/events", headers: ["Last-Event-ID": "2"], skipping: [])
            #expect(try nothingMissed.next()?["lastEventId"] == 2, "the resume point when nothing is replayed")

            for value in 3...7 { try client.set("a", "n", .int(value)) }
            let reset = try SSEClient(
                port: server.port, path: "/v1/observers/\(id)/events", headers: ["Last-Event-ID": "1"], skipping: [])
            let rebuilt = try reset.events(3)
            #expect(rebuilt.map(\.name) == ["reset", "change", "synced"])
            #expect(rebuilt[1]["initial"] == true && rebuilt[1]["new"] == 7)
            #expect(rebuilt[2]["lastEventId"] == 7)
            try client.set("a", "n", 8)
            #expect(try reset.next()?.id == 8)
        }
    }

    @Test("a Last-Event-ID the observer never made, or not an id, answers reset 'unknown' and the rebuild")
    func unknownResumePoint() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 5])
            let id = try client.createObserver()
            try client.observe(id, "a", "n", options: [])
            for resume in ["9", "-1", "abc"] {
                let stream = try SSEClient(
                    port: server.port, path: "/v1/observers/\(id)/events", headers: ["Last-Event-ID": resume],
                    skipping: [])
                let events = try stream.events(3)
                #expect(events.map(\.name) == ["reset", "change", "synced"], "Last-Event-ID \(resume)")
                #expect(events[0]["reason"] == "unknown" && events[0].id == nil)
                #expect(events[1]["new"] == 5 && events[1]["initial"] == true)
            }
        }
    }

    @Test("?commits=1: one commit after the last record of each revision (a multi-key PATCH is one unit)")
    func commits() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["x": 0, "y": 0, "z": 0])
            let id = try client.createObserver()
            for keyPath in ["x", "y", "z"] { try client.observe(id, "a", keyPath) }
            let stream = try server.stream(id, query: "?commits=1")
            let patch = try client.send("PATCH", "/v1/objects/a", json: ["values": ["x": 1, "y": 2, "z": 3]])
            #expect(patch.status == 200)
            try client.set("a", "x", 9)
            let events = try stream.events(6)
            #expect(events.map(\.name) == ["change", "change", "change", "commit", "change", "commit"])
            #expect(events[3]["revision"] == patch["revision"] && events[3].id == nil)
            #expect(events[0..<3].allSatisfy { $0["revision"] == patch["revision"] })
            #expect(events[5]["revision"] == events[4]["revision"])
            let plain = try server.stream(id)
            #expect(try plain.events(4).map(\.name) == ["change", "change", "change", "change"], "no commits unasked")
            #expect(try plain.next(timeout: 0.3) == nil)
            #expect(try SSEClient(port: server.port, path: "/v1/observers/\(id)/events?commits=yes").status == 400)
        }
    }

    @Test("POST …/progress is a barrier: each stream gets one progress after every earlier event")
    func progressBarrier() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            let streams = try (0..<2).map { _ in try server.stream(id) }
            for value in 1...50 { try client.set("a", "n", .int(value)) }
            let barrier = try client.send("POST", "/v1/observers/\(id)/progress", body: [])
            #expect(barrier.status == 200)
            let stats = try client.get("/v1/stats")
            #expect(barrier["revision"] == stats["revision"])
            for stream in streams {
                let events = try stream.events(51)
                #expect(events.prefix(50).map(\.id) == (1...50).map { $0 }, "every earlier event first")
                #expect(events[50].name == "progress" && events[50]["revision"] == barrier["revision"])
                #expect(try stream.next(timeout: 0.3) == nil, "one progress per barrier")
            }
            #expect(try client.send("POST", "/v1/observers/nobody/progress", body: []).status == 404)
        }
    }

    @Test("?progress=1: an idle stream gets progress events with the revision instead of keep-alive comments")
    func idleProgress() throws {
        try withServer(configure: { $0.heartbeatInterval = .milliseconds(200) }) { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            try client.set("a", "n", 1)
            let revision = try client.get("/v1/stats")["revision"]
            let stream = try server.stream(id, query: "?progress=1")
            let events = try stream.events(3, timeout: 3)
            #expect(events.map(\.name) == ["change", "progress", "progress"])
            #expect(events[1]["revision"] == revision && events[1].id == nil)
            #expect(!stream.comments.contains("keep-alive"))
        }
    }

    @Test("NDJSON gives the same events as SSE on the same observer, event for event")
    func ndjson() throws {
        try withServer(configure: { $0.heartbeatInterval = .milliseconds(300) }) { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver(["replay": 4])
            try client.observe(id, "a", "n")
            for value in 1...6 { try client.set("a", "n", .int(value)) }
            let sse = try SSEClient(
                port: server.port, path: "/v1/observers/\(id)/events?commits=1",
                headers: ["Last-Event-ID": "1"], skipping: [])
            let lines = try SSEClient(
                port: server.port, path: "/v1/observers/\(id)/events?commits=1",
                headers: ["Last-Event-ID": "1", "Accept": "application/x-ndjson"], skipping: [])
            #expect(lines.headerLines.contains("content-type: application/x-ndjson"))
            // Event 1 left the buffer: reset, the rebuild record and synced; then a live change and its commit.
            var expected = try sse.events(3)
            var got = try lines.events(3)
            try client.set("a", "n", 7)
            expected += try sse.events(2)
            got += try lines.events(2)
            #expect(got.map(\.name) == expected.map(\.name))
            #expect(got.map(\.id) == expected.map(\.id))
            #expect(got.map(\.json) == expected.map(\.json))
            #expect(expected.map(\.name) == ["reset", "change", "synced", "change", "commit"])
            #expect(try lines.next(timeout: 1) == nil)
            #expect(lines.comments.contains("keep-alive"), "the NDJSON keep-alive line")
            #expect(lines.retries.isEmpty, "no retry: line in NDJSON")
        }
    }

    // MARK: - The stream over a log, without HTTP (orders that depend on timing there)

    /// A stream over `log` with `progress` on, whose settled revision is `settled`.
    func progressStream(_ log: EventLog, replayEnd: ReplayEnd, settled: Int) -> EventStream {
        let stream = EventStream(
            log: log, cursor: 0, prelude: [], rebuild: nil, replayEnd: replayEnd,
            options: StreamOptions(framing: .ndjson, progress: true), hub: StreamHub(),
            revisions: FixedRevision(settled), onClose: {})
        stream.start(StreamControl(wake: {}, abort: {}))
        return stream
    }

    /// What the stream sends until it has nothing more, one NDJSON line per element.
    func drain(_ stream: EventStream) -> [String] {
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while case .bytes(let count) = buffer.withUnsafeMutableBytes({ stream.read(into: $0) }) {
            text += buffer.prefix(count)
        }
        return String(decoding: text, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    func changeEvents(_ log: EventLog, _ ids: ClosedRange<Int>, revision: Int, batch: Int) {
        for id in ids {
            _ = log.append(Event(id: id, name: "change", data: Array("{}".utf8), revision: revision), batch: batch)
        }
        _ = log.reveal()
    }

    @Test("a barrier inside the replay still comes after synced: the client is live before it hears progress")
    func syncedBeforeProgress() {
        let log = EventLog(label: "o", capacity: 10)
        changeEvents(log, 1...3, revision: 4, batch: 1)
        let stream = progressStream(log, replayEnd: ReplayEnd(lastEventID: 3, revision: 4), settled: 4)
        log.barrier(revision: 4).deliver()
        let lines = drain(stream)
        #expect(lines.count == 5)
        #expect(
            lines.suffix(2) == [
                #"{"event":"synced","data":{"lastEventId":3,"revision":4}}"#,
                #"{"event":"progress","data":{"revision":4}}"#,
            ])
    }

    @Test("an idle progress never tells a lower revision than the stream told before")
    func progressNeverGoesBack() {
        let log = EventLog(label: "o", capacity: 10)
        let stream = progressStream(log, replayEnd: ReplayEnd(lastEventID: 0, revision: 2), settled: 2)
        changeEvents(log, 1...1, revision: 9, batch: 1)
        log.barrier(revision: 9).deliver()
        stream.heartbeat()
        let lines = drain(stream)
        #expect(lines.count == 3, "synced, the change, the barrier's progress")
        #expect(lines.last == #"{"event":"progress","data":{"revision":9}}"#)
        stream.heartbeat()
        #expect(drain(stream) == [#"{"event":"progress","data":{"revision":9}}"#], "not the settled 2")
    }

    @Test("one read sends all that fits: the opening retry: with synced, a backlog over several log batches")
    func oneReadFillsTheChunk() {
        let log = EventLog(label: "o", capacity: 1_000)
        changeEvents(log, 1...600, revision: 1, batch: 1)  // a log batch is at most 256 events
        let stream = EventStream(
            log: log, cursor: 0, prelude: [], rebuild: nil, replayEnd: ReplayEnd(lastEventID: 600, revision: 1),
            options: StreamOptions(framing: .sse), hub: StreamHub(), revisions: FixedRevision(1), onClose: {})
        stream.start(StreamControl(wake: {}, abort: {}))
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        guard case .bytes(let count) = buffer.withUnsafeMutableBytes({ stream.read(into: $0) }) else {
            Issue.record("the first read sent nothing")
            return
        }
        let text = String(decoding: buffer.prefix(count), as: UTF8.self)
        #expect(text.hasPrefix("retry: 3000\n\nid: 1\nevent: change\n"))
        #expect(text.components(separatedBy: "event: change\n").count - 1 == 600)
        #expect(text.hasSuffix("event: synced\ndata: {\"lastEventId\":600,\"revision\":1}\n\n"))
        let next = buffer.withUnsafeMutableBytes { stream.read(into: $0) }
        guard case .wait = next else {
            Issue.record("then nothing more to send, not \(next)")
            return
        }
    }
}

/// A settled revision that stays where a test puts it.
private final class FixedRevision: SettledRevisions {
    let settledRevision: Int
    init(_ revision: Int) { settledRevision = revision }
}
