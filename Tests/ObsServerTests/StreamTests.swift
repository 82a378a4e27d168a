import Foundation
import ObservationCore
import Testing

@testable import ObsServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Event streams")
struct StreamTests {
    @Test("change records arrive on the stream with gapless ids, in revision order")
    func liveRecords() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            let stream = try server.stream(id)
            for value in 1...20 { try client.set("a", "n", .int(value)) }
            let events = try stream.events(20)
            #expect(events.map(\.id) == Array(1...20))
            #expect(events.map { $0["new"] } == (1...20).map { JSON.int($0) })
            let revisions = events.compactMap { event -> Int? in
                if case .int(let r)? = event["revision"] { r } else { nil }
            }
            #expect(revisions == revisions.sorted() && Set(revisions).count == 20)
            #expect(stream.retries.count == 1 && (2_000...5_000).contains(stream.retries[0]))
        }
    }

    @Test("resuming with Last-Event-ID or ?lastEventId sends exactly the missed events")
    func resume() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            let first = try server.stream(id)
            for value in 1...5 { try client.set("a", "n", .int(value)) }
            let seen = try first.events(3)  // read part, then drop the connection mid-stream
            first.close()
            for value in 6...8 { try client.set("a", "n", .int(value)) }
            let resumed = try server.stream(id, headers: ["Last-Event-ID": "\(seen.last?.id ?? 0)"])
            let rest = try resumed.events(5)
            #expect(rest.map(\.id) == [4, 5, 6, 7, 8])
            #expect(try resumed.next(timeout: 0.3) == nil, "nothing twice")
            let byQuery = try server.stream(id, query: "?lastEventId=6")
            #expect(try byQuery.events(2).map(\.id) == [7, 8])
            let fromStart = try server.stream(id)
            #expect(try fromStart.events(8).map(\.id) == Array(1...8), "no Last-Event-ID: from the oldest held")
        }
    }

    @Test("a resume point that left the buffer gets reset, rebuild records without ids, then live events")
    func reset() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0, "m": "x"])
            let id = try client.createObserver(["replay": 3])
            try client.observe(id, "a", "n")
            try client.observe(id, "a", "m", options: [])
            for value in 1...6 { try client.set("a", "n", .int(value)) }
            let stream = try server.stream(id, headers: ["Last-Event-ID": "1"])
            let events = try stream.events(3)
            #expect(events[0].name == "reset" && events[0].id == nil)
            #expect(events[0]["reason"] == "gap" && events[0]["oldestAvailable"] == 4)
            #expect(events[1].id == nil && events[1]["initial"] == true && events[1]["new"] == 6)
            #expect(events[2].id == nil && events[2]["keyPath"] == "m" && events[2]["new"] == "x")
            try client.set("a", "n", 7)
            let live = try stream.next()
            #expect(live?.id == 7 && live?["new"] == 7)
            let invalid = try SSEClient(
                port: server.port, path: "/v1/observers/\(id)/events", headers: ["Last-Event-ID": "x"])
            #expect(invalid.status == 200)
            #expect(try invalid.next()?["reason"] == "unknown", "an id the observer never made resets (7.2)")
        }
    }

    @Test("every stream of an observer gets every event")
    func severalStreams() throws {
        try withServer { server, client in
            try client.createObject("a")
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            let streams = try (0..<3).map { _ in try server.stream(id) }
            #expect(try client.get("/v1/observers/\(id)")["streams"] == 3)
            for value in 1...4 { try client.set("a", "n", .int(value)) }
            for stream in streams { #expect(try stream.events(4).map(\.id) == [1, 2, 3, 4]) }
        }
    }

    @Test("an HTTP/1.0 stream (no chunked encoding) gets whole events, however large")
    func http10Stream() throws {
        try withServer { server, client in
            try client.createObject("a", values: ["n": 0])
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            let socket = try connectLoopback(port: server.port)
            defer { close(socket) }
            let request = Array("GET /v1/observers/\(id)/events HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            let large = String(repeating: "x", count: 3_000)
            try client.set("a", "n", .string(large))
            var received: [UInt8] = []
            let deadline = Date().addingTimeInterval(5)
            var buffer = [UInt8](repeating: 0, count: 65536)
            while !String(decoding: received, as: UTF8.self).contains("\"new\":\"\(large)\""), Date() < deadline {
                var poll = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
                guard Glibc.poll(&poll, 1, 500) > 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                guard count > 0 else { break }
                received += buffer[0..<count]
            }
            #expect(String(decoding: received, as: UTF8.self).contains("\"new\":\"\(large)\""))
        }
    }

    @Test("an idle stream gets keep-alive comments")
    func heartbeat() throws {
        try withServer(configure: { $0.heartbeatInterval = .milliseconds(200) }) { server, client in
            let id = try client.createObserver()
            let stream = try server.stream(id)
            #expect(try stream.next(timeout: 1) == nil)
            #expect(stream.comments.filter { $0 == "keep-alive" }.count >= 2)
        }
    }

    @Test("a client that pauses until the socket is full gets every event, whole and in order, when it reads again")
    func pausedReader() throws {
        // 300 events of 64 KiB (19 MiB) overfill loopback's socket buffers (at most about
        // 10 MiB), so direct writes to the parked stream are cut short and wait for room.
        try withServer(configure: { $0.maxReplayBytes = 64 * 1024 * 1024 }) { server, client in
            try client.createObject("a")
            let id = try client.createObserver(["replay": 1_000])
            try client.observe(id, "a", "blob", options: ["new"])
            let paused = try server.stream(id)  // reads nothing until the writes are done
            for index in 1...300 {
                try client.set("a", "blob", .string(String(repeating: Character("\(index % 10)"), count: 64 * 1024)))
            }
            let events = try paused.events(300, timeout: 30)
            #expect(events.map(\.id) == Array(1...300))
            for (index, event) in zip(1...300, events) {
                #expect(event.data.contains(String(repeating: Character("\(index % 10)"), count: 64 * 1024)))
            }
            #expect(try client.get("/v1/observers/\(id)")["dropped"] == 0)
        }
    }

    @Test("a stream that cannot keep up is cut off and counted; the client resumes")
    func slowReader() throws {
        try withServer { server, client in
            try client.createObject("a")
            let id = try client.createObserver(["replay": 4])
            try client.observe(id, "a", "blob", options: ["new"])
            let stalled = try server.stream(id)  // never reads while the writes go on
            let big = JSON.string(String(repeating: "x", count: 256 * 1024))
            for _ in 0..<60 { try client.set("a", "blob", big) }
            let events = try stalled.drainUntilClosed(timeout: 10)
            #expect(stalled.closed, "the server must close a stream that fell out of its buffer")
            #expect(events.count < 60)
            let observer = try client.get("/v1/observers/\(id)")
            #expect(observer["dropped"] == 1)
            let resumed = try server.stream(id, headers: ["Last-Event-ID": "\(events.last?.id ?? 0)"])
            #expect(try resumed.next()?.name == "reset")
        }
    }

    @Test("deleting an object cancels its registrations on the stream; a retained one answers 202 until released")
    func deletion() throws {
        try withServer { server, client in
            try client.createObject("p", values: ["name": "Ada"])
            try client.createObject("acct", values: ["owner": ["$ref": "p"]])
            let watcher = try client.createObserver()
            let registration = try client.observe(watcher, "p", "name")
            try client.observe(watcher, "acct", "owner.name")
            let stream = try server.stream(watcher)
            #expect(try client.delete("/v1/objects/p").status == 204)
            let events = try stream.events(2)
            #expect(events[0].name == "cancelled")
            #expect(events[0]["observation"] == .string(registration) && events[0]["reason"] == "objectDeleted")
            #expect(events[1]["keyPath"] == "owner.name" && events[1]["new"] == JSON.null && events[1]["old"] == "Ada")

            try client.createObject("kept", values: ["x": 1])
            let retainer = try client.createObserver(["retainObserved": true])
            try client.observe(retainer, "kept", "x")
            let pending = try client.delete("/v1/objects/kept")
            #expect(pending.status == 202)
            #expect(pending["state"] == "releasePending" && pending["retainedBy"] == [.string(retainer)])
            #expect(try client.get("/v1/objects/kept")["retainedBy"] == [.string(retainer)])
            #expect(try client.delete("/v1/observers/\(retainer)").status == 204)
            #expect(try client.get("/v1/objects/kept").status == 404)
        }
    }

    @Test("unobserving is a fence: once DELETE answered, no record for it follows")
    func fence() throws {
        try withServer { server, client in
            try client.createObject("a")
            let id = try client.createObserver()
            let registration = try client.observe(id, "a", "n")
            let stream = try server.stream(id)
            try client.set("a", "n", 1)
            #expect(try client.delete("/v1/observers/\(id)/observations/\(registration)").status == 204)
            try client.set("a", "n", 2)
            let events = try stream.events(2)
            #expect(events.map(\.name) == ["change", "cancelled"])
            #expect(events[1]["reason"] == "unobserved")
            #expect(try stream.next(timeout: 0.3) == nil)
        }
    }

    @Test("the admin stream reports registry and value changes with its own gapless ids")
    func adminStream() throws {
        try withServer { server, client in
            let admin = try server.stream(nil)
            try client.createObject("a")
            let id = try client.createObserver()
            try client.observe(id, "a", "n")
            try client.set("a", "n", 1)
            #expect(try client.delete("/v1/observers/\(id)").status == 204)
            #expect(try client.delete("/v1/objects/a").status == 204)
            let events = try admin.events(7)
            #expect(
                events.map(\.name) == [
                    "objectCreated", "observerCreated", "observationAdded", "valueChanged", "observationRemoved",
                    "observerRemoved", "objectDeleted",
                ])
            #expect(events.map(\.id) == Array(1...7))
            #expect(events.allSatisfy { $0["revision"] != nil })
            #expect(events[5]["reason"] == "deleted")
        }
    }

    @Test("stopping the server ends open streams promptly")
    func shutdown() throws {
        let server = try TestServer()
        let client = server.client()
        let id = try client.createObserver()
        let streams = try (0..<20).map { _ in try server.stream(id) }
        let started = ContinuousClock.now
        server.stop()
        #expect(ContinuousClock.now - started < .seconds(3))
        for stream in streams { _ = try stream.drainUntilClosed(timeout: 3) }
        #expect(streams.allSatisfy { $0.closed })
    }

    @Test("past --max-streams, opening a stream answers 429")
    func streamLimit() throws {
        try withServer(configure: { $0.maxStreams = 2 }) { server, client in
            let id = try client.createObserver()
            let open = try (0..<2).map { _ in try server.stream(id) }
            let refused = try SSEClient(port: server.port, path: "/v1/observers/\(id)/events")
            #expect(refused.status == 429)
            _ = open
        }
    }
}
