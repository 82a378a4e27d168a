import Foundation
import ObservationCore
import Testing

@testable import ObsServer

#if canImport(Glibc)
    import Glibc
#endif

/// Connections are bounded too: in all, per client address, and in how long a client may
/// take without making progress (a slow-header client cannot hold a connection forever).
@Suite("Connections: limits and timeouts")
struct ConnectionTests {
    @Test("past --max-connections-per-address, a client's next connection is closed at once")
    func perAddressLimit() throws {
        try withServer(configure: { $0.maxConnectionsPerAddress = 3 }) { server, _ in
            let held = try (0..<3).map { _ in try answeredConnection(port: server.port) }
            #expect(try closedWithoutAnswer(port: server.port), "a fourth connection from the address was served")
            close(held[0])
            try waitUntil(within: .seconds(2)) { (try? answeredConnection(port: server.port)).map { close($0) } != nil }
            held.dropFirst().forEach { close($0) }
        }
    }

    @Test("past --max-connections, the next connection waits (in the listen backlog) until one closes")
    func totalLimit() throws {
        try withServer(configure: { $0.maxConnections = 4 }) { server, _ in
            let held = try (0..<4).map { _ in try answeredConnection(port: server.port) }
            let waiting = try connectLoopback(port: server.port)
            defer { close(waiting) }
            let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
            _ = request.withUnsafeBytes { send(waiting, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            var poll = pollfd(fd: waiting, events: Int16(POLLIN), revents: 0)
            #expect(Glibc.poll(&poll, 1, 1000) == 0, "a fifth connection was served")
            held.forEach { close($0) }
            #expect(Glibc.poll(&poll, 1, 5000) == 1, "the waiting connection was never served")
        }
    }

    @Test("a client that sends its headers too slowly is cut off after --connection-timeout")
    func slowHeaders() throws {
        try withServer(configure: { $0.connectionTimeout = 1 }) { server, client in
            let socket = try connectLoopback(port: server.port)
            defer { close(socket) }
            let partial = Array("GET /v1/stats HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".utf8)
            _ = partial.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            let started = ContinuousClock.now
            #expect(try readsEndOfStream(socket, within: 5), "the slow client was never cut off")
            #expect(ContinuousClock.now - started < .seconds(4))
            #expect(try client.get("/healthz").status == 200)
        }
    }

    @Test("a parked event stream never times out, however long it is idle")
    func streamsDoNotTimeOut() throws {
        try withServer(configure: {
            $0.connectionTimeout = 1
            $0.heartbeatInterval = .seconds(15)
        }) { server, client in
            let id = try client.createObserver()
            let stream = try server.stream(id)
            Thread.sleep(forTimeInterval: 2.5)
            let client = server.client()  // the idle keep-alive connection above has timed out, as it should
            defer { client.close() }
            #expect(try client.get("/v1/stats")["streams"] == 1)
            try client.createObject("a")
            try client.observe(id, "a", "n")
            try client.set("a", "n", 1)
            #expect(try stream.next()?["new"] == 1)
        }
    }

    @Test("--connection-memory bounds a request's headers: 431 past it, and it is checked")
    func headerRoom() throws {
        try withServer { server, _ throws in
            #expect(try statusOfRequest(port: server.port, headerBytes: 7_000) == 200)
            #expect(try statusOfRequest(port: server.port, headerBytes: 9_000) == 431)
        }
        try withServer(configure: { $0.connectionMemory = 16 * 1024 }) { server, _ throws in
            #expect(try statusOfRequest(port: server.port, headerBytes: 9_000) == 200)
        }
        var config = ServerConfig()
        config.connectionMemory = 1024
        #expect(throws: ConfigError.self) { try config.validate() }
    }
}

/// The status a `GET /healthz` with an extra header of `headerBytes` bytes is answered with.
private func statusOfRequest(port: UInt16, headerBytes: Int) throws -> Int {
    let socket = try connectLoopback(port: port)
    defer { close(socket) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let filler = String(repeating: "a", count: headerBytes)
    let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: \(filler)\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
    guard count >= 12 else { throw TestClientError("no answer to a request with \(headerBytes) header bytes") }
    return Int(String(decoding: buffer[9..<12], as: UTF8.self)) ?? 0
}

/// A connection that has been served one request (so the server has accepted and counted it).
private func answeredConnection(port: UInt16) throws -> Int32 {
    let socket = try connectLoopback(port: port)
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
    guard count > 0, String(decoding: buffer[0..<count], as: UTF8.self).hasPrefix("HTTP/1.1 200") else {
        close(socket)
        throw TestClientError("no answer on a new connection")
    }
    return socket
}

/// Whether a new connection is closed by the server without an answer to its request.
private func closedWithoutAnswer(port: UInt16) throws -> Bool {
    guard let socket = try? connectLoopback(port: port) else { return true }
    defer { close(socket) }
    let request = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
    _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    return try readsEndOfStream(socket, within: 5)
}

/// Whether `socket` reaches end of stream (or a reset) within `seconds`, with nothing read first.
private func readsEndOfStream(_ socket: Int32, within seconds: Int) throws -> Bool {
    var poll = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
    guard Glibc.poll(&poll, 1, Int32(seconds * 1000)) > 0 else { return false }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
    return count <= 0
}
