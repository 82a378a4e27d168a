import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// What one soak client saw and did.
private struct SoakLog: Sendable {
    struct Window: Sendable {
        let object: String
        let from: Int
        var until: Int?
    }

    var observerID = ""
    var windows: [String: Window] = [:]
    var records: [String: [Int]] = [:]
    var held = 0
    var failures: [String] = []
}

@Suite("Soak: 16 concurrent clients")
struct SoakTests {
    static let clients = 16
    static let objects = 8
    /// 30 s by default; `OBS_SOAK_SECONDS` shortens it (the ThreadSanitizer pass).
    static var seconds: Double { Double(ProcessInfo.processInfo.environment["OBS_SOAK_SECONDS"] ?? "") ?? 30 }

    @Test("registering, unregistering, setting and reconnecting: every change exactly once, in order; nothing leaks")
    func soak() throws {
        // Buffers big enough that no client falls out of them: this checks exactly-once, not eviction.
        let server = try TestServer { $0.maxReplayBytes = 256 << 20 }
        defer { server.stop() }
        let setup = server.client()
        for index in 0..<Self.objects { try setup.createObject("s\(index)", values: ["v": 0]) }
        let port = server.port
        let puts = Locked<[(object: String, revision: Int)]>([])
        let logs = Locked<[SoakLog]>([])
        let paused = DispatchGroup()
        let resume = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        let deadline = Date().addingTimeInterval(Self.seconds)
        for worker in 0..<Self.clients {
            paused.enter()
            done.enter()
            Thread {
                var log = SoakLog()
                Self.run(worker, port: port, until: deadline, puts: puts, log: &log, paused: paused, resume: resume)
                logs.withLock { $0.append(log) }
                done.leave()
            }.start()
        }
        #expect(paused.wait(timeout: .now() + Self.seconds + 60) == .success, "clients did not finish their load")
        // Everyone is paused: the server's counts must match what the clients hold.
        let stats = try setup.get("/v1/stats")
        #expect(stats["observers"] == .int(Self.clients))
        for _ in 0..<Self.clients { resume.signal() }
        #expect(done.wait(timeout: .now() + 60) == .success)
        let results = logs.withLock { $0 }
        let held = results.map(\.held).reduce(0, +)
        #expect(stats["observations"] == .int(held), "stats \(stats.text) vs \(held) held by the clients")

        let all = puts.withLock { $0 }
        var byObject: [String: [Int]] = [:]
        for put in all { byObject[put.object, default: []].append(put.revision) }
        var checked = 0
        for log in results {
            #expect(log.failures.isEmpty, "\(log.failures.prefix(5))")
            for (registration, window) in log.windows {
                let expected = (byObject[window.object] ?? []).filter {
                    $0 > window.from && $0 < (window.until ?? .max)
                }.sorted()
                let got = log.records[registration] ?? []
                #expect(
                    got == expected,
                    "\(registration) on \(window.object): \(got.count) records, \(expected.count) expected")
                checked += got.count
            }
        }
        #expect(checked > 0)
        // Every observer was deleted by its client: nothing may remain.
        let after = try setup.get("/v1/stats")
        #expect(after["observers"] == 0 && after["observations"] == 0)
    }

    private static func run(
        _ worker: Int, port: UInt16, until deadline: Date, puts: Locked<[(object: String, revision: Int)]>,
        log: inout SoakLog, paused: DispatchGroup, resume: DispatchSemaphore
    ) {
        let client = TestClient(port: port)
        var generator = SystemRandomNumberGenerator()
        var lastID = 0
        var lastRevision = 0
        var stream: SSEClient?
        var hasPaused = false
        func fail(_ text: String) { if log.failures.count < 20 { log.failures.append("client \(worker): \(text)") } }
        func consume(_ event: SSEEvent) {
            guard let id = event.id else { return fail("event without id: \(event)") }
            if id != lastID + 1 { fail("id \(id) after \(lastID)") }
            lastID = id
            guard case .string(let registration)? = event["observation"], case .int(let revision)? = event["revision"]
            else {
                return fail("event without observation or revision: \(event)")
            }
            if event.name == "change" {
                if revision <= lastRevision { fail("revision \(revision) after \(lastRevision)") }
                lastRevision = revision
                log.records[registration, default: []].append(revision)
            } else if event.name == "cancelled" {
                log.windows[registration]?.until = revision
            }
        }
        func drain(_ timeout: TimeInterval) throws {
            while let event = try stream?.next(timeout: timeout) { consume(event) }
        }
        do {
            log.observerID = try client.createObserver(["lease": 60, "replay": 100_000])
            stream = try SSEClient(port: port, path: "/v1/observers/\(log.observerID)/events")
            while Date() < deadline {
                let object = "s\(Int.random(in: 0..<objects, using: &generator))"
                switch Int.random(in: 0..<10, using: &generator) {
                case 0..<3:
                    let response = try client.send(
                        "POST", "/v1/observers/\(log.observerID)/observations",
                        json: ["object": .string(object), "keyPath": "v", "options": ["new"]])
                    if response.status == 201, case .int(let revision) = response["revision"],
                        case .array(let list) = response["observations"], case .object(let first)? = list.first,
                        case .string(let id)? = first["id"]
                    {
                        log.windows[id] = SoakLog.Window(object: object, from: revision)
                        log.held += 1
                    } else if response.status != 200 {
                        fail("observe: \(response.status) \(response.text)")
                    }
                case 3..<5:
                    let active = log.windows.filter { $0.value.until == nil }.map(\.key)
                    guard let id = active.randomElement(using: &generator) else { continue }
                    let response = try client.delete("/v1/observers/\(log.observerID)/observations/\(id)")
                    if response.status == 204 {
                        log.held -= 1
                        log.windows[id]?.until = .max - 1  // the cancelled event gives the exact revision
                    } else {
                        fail("unobserve: \(response.status) \(response.text)")
                    }
                case 5..<9:
                    let response = try client.send(
                        "PUT", "/v1/objects/\(object)/values/v", json: ["value": .int(worker)])
                    guard case .int(let revision) = response["revision"] else {
                        fail("put: \(response.text)"); continue
                    }
                    puts.withLock { $0.append((object, revision)) }
                default:
                    try drain(0)
                    stream?.close()
                    stream = try SSEClient(
                        port: port, path: "/v1/observers/\(log.observerID)/events",
                        headers: ["Last-Event-ID": "\(lastID)"])
                }
                try drain(0)
            }
            hasPaused = true
            paused.leave()
            resume.wait()
            // Read everything the observer's log holds, then let it go.
            let observer = try client.get("/v1/observers/\(log.observerID)")
            guard case .int(let finalID) = observer["lastEventId"] else { throw TestClientError("no lastEventId") }
            let end = Date().addingTimeInterval(20)
            while lastID < finalID, Date() < end { try drain(0.5) }
            if lastID != finalID { fail("stream ended at \(lastID), log at \(finalID)") }
            for (id, window) in log.windows where window.until == .max - 1 {
                fail("no cancelled event for \(id)")
                log.windows[id]?.until = nil
            }
            stream?.close()
            #expect(try client.delete("/v1/observers/\(log.observerID)").status == 204)
        } catch {
            fail("transport: \(error)")
            if !hasPaused {
                paused.leave()
                resume.wait()
            }
        }
    }
}
