import Foundation
import ObservationCore
import Testing

@testable import ObsServer

#if canImport(Glibc)
    import Glibc
#endif

/// Section 7.1: a stream whose client goes away is noticed at once, and a client that stops
/// reading cannot make the server hold more than its buffers allow.
@Suite("Liveness: closed streams are noticed at once")
struct LivenessTests {
    @Test("a client that closes is gone from every count within 1 s, and its lease starts")
    func closeIsNoticed() throws {
        try withServer { server, client in
            let id = try client.createObserver(["lease": 60])
            let stream = try server.stream(id)
            #expect(try client.get("/v1/stats")["streams"] == 1)
            #expect(try client.get("/v1/observers/\(id)")["expiresAt"] == .null)
            stream.close()
            let elapsed = try waitUntilNoStreams(client, within: .seconds(1))
            #expect(elapsed < .seconds(1), "the close was noticed after \(elapsed)")
            let observer = try client.get("/v1/observers/\(id)")
            #expect(observer["streams"] == 0 && observer["connected"] == false)
            #expect(observer["expiresAt"] != .null, "the lease must count again")
        }
    }

    @Test("a reset connection is noticed as quickly as a closed one")
    func resetIsNoticed() throws {
        try withServer { server, client in
            let id = try client.createObserver()
            let socket = try openRawStream(port: server.port, path: "/v1/observers/\(id)/events")
            try waitUntil(within: .seconds(2)) { try client.get("/v1/stats")["streams"] == 1 }
            var linger = linger(l_onoff: 1, l_linger: 0)  // close with RST
            setsockopt(socket, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<linger>.size))
            close(socket)
            #expect(try waitUntilNoStreams(client, within: .seconds(1)) < .seconds(1))
        }
    }

    @Test("the slot under --max-streams is free again within 1 s of the close")
    func slotIsFreed() throws {
        try withServer(configure: { $0.maxStreams = 1 }) { server, client in
            let id = try client.createObserver()
            let first = try server.stream(id)
            #expect(try SSEClient(port: server.port, path: "/v1/observers/\(id)/events").status == 429)
            first.close()
            let started = ContinuousClock.now
            var reopened: SSEClient?
            while ContinuousClock.now - started < .seconds(1) {
                let attempt = try SSEClient(port: server.port, path: "/v1/observers/\(id)/events")
                if attempt.status == 200 {
                    reopened = attempt
                    break
                }
                usleep(5_000)
            }
            #expect(reopened != nil, "the slot stayed taken for a second after the client closed")
        }
    }

    @Test("an observer whose last stream's client goes away expires after its lease")
    func leaseRunsAfterClose() throws {
        try withServer { server, client in
            let id = try client.createObserver(["lease": 1])
            let stream = try server.stream(id)
            usleep(1_500_000)  // longer than the lease: the open stream holds it
            #expect(try client.get("/v1/observers/\(id)").status == 200)
            stream.close()
            try waitUntil(within: .seconds(3)) { try client.get("/v1/observers/\(id)").status == 404 }
        }
    }

    @Test("100 closes: every one noticed within 1 s (median and max printed)")
    func hundredCloses() throws {
        try withServer { server, client in
            let id = try client.createObserver()
            var times: [Duration] = []
            for _ in 0..<100 {
                let stream = try server.stream(id)
                try waitUntil(within: .seconds(2)) { try client.get("/v1/stats")["streams"] == 1 }
                stream.close()
                times.append(try waitUntilNoStreams(client, within: .seconds(2), every: 0.001))
            }
            times.sort()
            print("close → stream count drops, 100 closes: median \(times[50]), max \(times[99])")
            #expect(times[99] < .seconds(1))
        }
    }

    @Test("a client that stops reading is cut off once its unsent events pass the byte budget")
    func byteBudgetCutsOff() throws {
        try withServer(configure: { $0.maxReplayBytes = 256 * 1024 }) { server, client in
            try client.createObject("a")
            let id = try client.createObserver(["replay": 100_000])
            try client.observe(id, "a", "blob", options: ["new"])
            let socket = try openRawStream(port: server.port, path: "/v1/observers/\(id)/events", receiveBuffer: 4096)
            defer { close(socket) }
            let blob = JSON.string(String(repeating: "x", count: 64 * 1024))
            for _ in 0..<200 { try client.set("a", "blob", blob) }
            try waitUntil(within: .seconds(2)) { try client.get("/v1/observers/\(id)")["dropped"] == 1 }
            try waitUntil(within: .seconds(2)) { try client.get("/v1/observers/\(id)")["streams"] == 0 }
            #expect(try client.get("/v1/stats")["droppedStreams"] == 1)
        }
    }
}

extension LivenessTests {
    @Test("stopping the server ends a stream whose client stopped reading (parked, its rest waiting for room)")
    func stopWithStalledReader() throws {
        let server = try TestServer(configure: { $0.maxReplayBytes = 64 * 1024 * 1024 })
        let client = server.client()
        try client.createObject("a")
        let id = try client.createObserver(["replay": 10_000])
        try client.observe(id, "a", "blob", options: ["new"])
        let socket = try openRawStream(port: server.port, path: "/v1/observers/\(id)/events", receiveBuffer: 4096)
        defer { close(socket) }
        let blob = JSON.string(String(repeating: "x", count: 64 * 1024))
        for _ in 0..<100 { try client.set("a", "blob", blob) }  // 6.4 MiB: more than the sockets hold
        #expect(try client.get("/v1/observers/\(id)")["streams"] == 1)
        let started = ContinuousClock.now
        server.stop()  // libmicrohttpd aborts the process if stopped with a parked connection
        #expect(ContinuousClock.now - started < .seconds(9))
    }
}

/// Polls `/v1/stats` until `streams` is 0; returns how long that took (throws past `within`).
@discardableResult
func waitUntilNoStreams(_ client: TestClient, within limit: Duration, every seconds: Double = 0.005) throws
    -> Duration
{
    let started = ContinuousClock.now
    try waitUntil(within: limit, every: seconds) { try client.get("/v1/stats")["streams"] == 0 }
    return ContinuousClock.now - started
}

/// Polls `condition` until it holds (throws past `within`).
func waitUntil(within limit: Duration, every seconds: Double = 0.01, _ condition: () throws -> Bool) throws {
    let started = ContinuousClock.now
    while try !condition() {
        guard ContinuousClock.now - started < limit else { throw TestClientError("still not so after \(limit)") }
        usleep(UInt32(seconds * 1_000_000))
    }
}

/// A stream request on a socket that the test never reads (a client that stopped reading),
/// with a small receive buffer when asked.
func openRawStream(port: UInt16, path: String, receiveBuffer: Int32? = nil) throws -> Int32 {
    let socket = try connectLoopback(port: port)
    if var size = receiveBuffer {
        setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    return socket
}
