import Foundation
import ObservationCore

#if canImport(Glibc)
    import Glibc
#endif

/// A response as the test client read it.
struct TestResponse {
    let status: Int
    let headers: [String: String]
    let body: [UInt8]

    var json: JSON { (try? JSONParser.parse(body)) ?? .null }
    var text: String { String(decoding: body, as: UTF8.self) }

    /// `error.code` of an error body.
    var errorCode: String? {
        guard case .object(let root) = json, case .object(let error)? = root["error"],
            case .string(let code)? = error["code"]
        else { return nil }
        return code
    }

    subscript(key: String) -> JSON {
        guard case .object(let members) = json else { return .null }
        return members[key] ?? .null
    }

    /// `error.details` of an error body (empty for any other).
    var errorDetails: JSONObject {
        guard case .object(let error) = self["error"], case .object(let details)? = error["details"] else { return [:] }
        return details
    }
}

/// A minimal blocking HTTP/1.1 client on one keep-alive connection to 127.0.0.1.
/// Every read has a 10 s timeout, so a test can never hang.
final class TestClient {
    private let port: UInt16
    private var socket: Int32 = -1
    private var buffer: [UInt8] = []

    init(port: UInt16) { self.port = port }

    deinit { close() }

    func close() {
        if socket >= 0 { Glibc.close(socket) }
        socket = -1
        buffer = []
    }

    func get(_ path: String, headers: [String: String] = [:]) throws -> TestResponse {
        try send("GET", path, headers: headers)
    }

    func delete(_ path: String, headers: [String: String] = [:]) throws -> TestResponse {
        try send("DELETE", path, headers: headers)
    }

    /// Sends `json` (a JSON value) with `Content-Type: application/json`.
    func send(_ method: String, _ path: String, json: JSON, headers: [String: String] = [:]) throws -> TestResponse {
        var headers = headers
        headers["Content-Type"] = headers["Content-Type"] ?? "application/json"
        return try send(method, path, body: json.encoded(), headers: headers)
    }

    func send(_ method: String, _ path: String, body: [UInt8] = [], headers: [String: String] = [:]) throws
        -> TestResponse
    {
        if socket < 0 { try connect() }
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        do {
            try write(Array(head.utf8) + body)
            return try readResponse(method: method)
        } catch {
            close()
            throw error
        }
    }

    /// Writes raw bytes (for malformed or chunked requests) and reads one response.
    func raw(_ bytes: [UInt8]) throws -> TestResponse {
        if socket < 0 { try connect() }
        try write(bytes)
        return try readResponse(method: "POST")
    }

    // MARK: - Wire

    private func connect() throws {
        socket = try connectLoopback(port: port)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    private func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard written > 0 else { throw TestClientError("send failed") }
            offset += written
        }
    }

    private func fill() throws {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw TestClientError(count == 0 ? "connection closed" : "read timed out") }
        buffer.append(contentsOf: chunk[0..<count])
    }

    private func readLine() throws -> String {
        while true {
            if let index = buffer.firstIndex(of: 0x0A) {
                let line = buffer[..<index]
                buffer.removeFirst(index + 1)
                return String(decoding: line.last == 0x0D ? line.dropLast() : line, as: UTF8.self)
            }
            try fill()
        }
    }

    private func readBytes(_ count: Int) throws -> [UInt8] {
        while buffer.count < count { try fill() }
        let bytes = Array(buffer[..<count])
        buffer.removeFirst(count)
        return bytes
    }

    private func readResponse(method: String) throws -> TestResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw TestClientError("bad status line: \(statusLine)")
        }
        var headers: [String: String] = [:]
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                    in: .whitespaces)
            }
        }
        var body: [UInt8] = []
        if method == "HEAD" || status == 204 || status == 304 {
        } else if headers["transfer-encoding"]?.lowercased() == "chunked" {
            while true {
                let size = Int(try readLine(), radix: 16) ?? 0
                if size == 0 {
                    _ = try readLine()
                    break
                }
                body += try readBytes(size)
                _ = try readLine()
            }
        } else if let length = headers["content-length"].flatMap(Int.init) {
            body = try readBytes(length)
        }
        if headers["connection"]?.lowercased() == "close" { close() }
        return TestResponse(status: status, headers: headers, body: body)
    }
}

/// A TCP socket connected to 127.0.0.1:`port`.
/// A socket connected to the server; `receiveBuffer`: its receive buffer, set before it connects
/// (so that the window it offers from the first segment on is that small).
func connectLoopback(port: UInt16, receiveBuffer: Int32? = nil) throws -> Int32 {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard socket >= 0 else { throw TestClientError("socket failed") }
    if var size = receiveBuffer {
        setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let result = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard result == 0 else {
        Glibc.close(socket)
        throw TestClientError("connect failed")
    }
    return socket
}

struct TestClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
