import Foundation
import Glibc
import ObservationCore

/// An HTTP receiver on 127.0.0.1 for outbound requests: records each request and answers as
/// `mode` says (a status, never, or by closing the connection).
final class LoopbackReceiver: Sendable {
    enum Mode: Sendable {
        case status(Int)
        /// Reads the request and never answers (until stopped).
        case hang
        /// Reads the request and closes the connection without an answer.
        case close
    }

    struct Received: Sendable {
        let headers: [String: String]
        let body: [UInt8]
        let at: ContinuousClock.Instant
    }

    private struct State: Sendable {
        var mode: Mode
        var received: [Received] = []
        var connections: [Int32] = []
        var stopping = false
    }

    let port: UInt16
    private let listener: Int32
    private let state: Locked<State>

    init(mode: Mode = .status(204)) throws {
        state = Locked(State(mode: mode))
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && listen(listener, 64) == 0
                    && getsockname(listener, pointer, &length) == 0
            }
        }
        port = UInt16(bigEndian: address.sin_port)
        guard bound else { throw TestClientError("cannot listen on loopback") }
        Thread { [self] in acceptLoop() }.start()
    }

    var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    var received: [Received] { state.withLock { $0.received } }

    /// Waits (bounded) until `count` requests arrived; returns them all.
    func waitFor(_ count: Int, timeout: Duration = .seconds(10)) -> [Received] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let received = self.received
            if received.count >= count { return received }
            Thread.sleep(forTimeInterval: 0.01)
        }
        return received
    }

    func stop() {
        // Under the lock: a connection's thread closes its descriptor only after leaving the list.
        state.withLock { state in
            state.stopping = true
            for socket in state.connections { shutdown(socket, Int32(SHUT_RDWR)) }
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    deinit { close(listener) }

    private func acceptLoop() {
        while true {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            let accepted = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.connections.append(connection)
                return true
            }
            guard accepted else {
                close(connection)
                return
            }
            Thread { [self] in serve(connection) }.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer {
            // Out of the list before the close: a descriptor reused by another socket is never shut down here.
            state.withLock { $0.connections.removeAll { $0 == connection } }
            close(connection)
        }
        var buffer: [UInt8] = []
        while let (headers, body) = readRequest(connection, &buffer) {
            let mode = state.withLock { state -> Mode in
                state.received.append(Received(headers: headers, body: body, at: .now))
                return state.mode
            }
            switch mode {
            case .status(let status):
                let answer = "HTTP/1.1 \(status) Answer\r\nContent-Length: 0\r\n\r\n"
                _ = answer.utf8CString.withUnsafeBufferPointer {
                    send(connection, $0.baseAddress, answer.utf8.count, 0)
                }
            case .hang:
                var byte: UInt8 = 0
                while recv(connection, &byte, 1, 0) > 0 {}
                return
            case .close:
                return
            }
        }
    }

    /// One request's headers (names lower-cased) and body, or nil once the peer closed.
    private func readRequest(_ connection: Int32, _ buffer: inout [UInt8]) -> ([String: String], [UInt8])? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        while headerEnd == nil {
            if let end = buffer.indices.dropLast(3).first(where: { Array(buffer[$0..<$0 + 4]) == separator }) {
                headerEnd = end
                break
            }
            guard fill(connection, &buffer) else { return nil }
        }
        guard let end = headerEnd else { return nil }
        let lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < end + 4 + length {
            guard fill(connection, &buffer) else { return nil }
        }
        let body = Array(buffer[(end + 4)..<(end + 4 + length)])
        buffer.removeFirst(end + 4 + length)
        return (headers, body)
    }

    private func fill(_ connection: Int32, _ buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = recv(connection, &chunk, chunk.count, 0)
        guard count > 0 else { return false }
        buffer += chunk[..<count]
        return true
    }
}
