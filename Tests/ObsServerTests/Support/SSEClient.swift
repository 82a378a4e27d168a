import Foundation
import ObservationCore

#if canImport(Glibc)
    import Glibc
#endif

/// One Server-Sent Event as a client sees it.
struct SSEEvent: CustomStringConvertible {
    var id: Int?
    var name = "message"
    var data = ""

    var json: JSON { (try? JSONParser.parse(data)) ?? .null }
    var description: String { "\(id.map(String.init) ?? "-") \(name) \(data)" }

    subscript(key: String) -> JSON? {
        guard case .object(let members) = json else { return nil }
        return members[key]
    }
}

/// A blocking SSE client on its own connection: sends the GET, then decodes the chunked
/// body into events and comments. Every wait is bounded. Like an `EventSource` that adds no
/// listener for them, it skips `synced` events unless told otherwise (`skipping`).
final class SSEClient {
    private(set) var status = 0
    /// The answer's header lines, lowercased (`name: value`).
    private(set) var headerLines: [String] = []
    private(set) var comments: [String] = []
    /// Every `retry:` value the stream sent.
    private(set) var retries: [Int] = []
    private let skipping: Set<String>
    /// Reads NDJSON lines (`{"id", "event", "data"}`) instead of SSE blocks.
    private let ndjson: Bool
    private(set) var closed = false
    private var socket: Int32 = -1
    private var raw: [UInt8] = []
    private var body: [UInt8] = []
    private var chunkRemaining = 0
    private var chunked = true

    init(port: UInt16, path: String, headers: [String: String] = [:], skipping: Set<String> = ["synced"]) throws {
        self.skipping = skipping
        ndjson = headers["Accept"] == "application/x-ndjson"
        socket = try connectLoopback(port: port)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        if headers["Accept"] == nil { request += "Accept: text/event-stream\r\n" }
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        request += "\r\n"
        _ = request.utf8CString.withUnsafeBufferPointer {
            Glibc.send(socket, $0.baseAddress, $0.count - 1, Int32(MSG_NOSIGNAL))
        }
        // Status line and headers.
        let deadline = Date().addingTimeInterval(5)
        var head: [UInt8] = []
        while Date() < deadline {
            if let end = Self.find([13, 10, 13, 10], in: raw) {
                head = Array(raw[..<end])
                raw.removeFirst(end + 4)
                break
            }
            guard try fill(until: deadline) else { break }
        }
        let text = String(decoding: head, as: UTF8.self)
        status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        headerLines = text.lowercased().components(separatedBy: "\r\n").dropFirst().map { $0 }
        chunked = text.lowercased().contains("transfer-encoding: chunked")
        if !chunked,
            let length = text.lowercased().split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") })
        {
            chunkRemaining = Int(length.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
        }
    }

    deinit { close() }

    func close() {
        if socket >= 0 { Glibc.close(socket) }
        socket = -1
    }

    /// The next event, or nil if none arrives within `timeout` (or the stream ended).
    func next(timeout: TimeInterval = 5) throws -> SSEEvent? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let event = parseEvent() { return event }
            if closed { return nil }
            guard try fill(until: deadline) else { return nil }
            decodeChunks()
        }
    }

    /// Exactly `count` events, failing if they do not all arrive within `timeout`.
    func events(_ count: Int, timeout: TimeInterval = 5) throws -> [SSEEvent] {
        var events: [SSEEvent] = []
        let deadline = Date().addingTimeInterval(timeout)
        while events.count < count {
            guard let event = try next(timeout: max(0.01, deadline.timeIntervalSinceNow)) else {
                throw TestClientError("got \(events.count) of \(count) events: \(events)")
            }
            events.append(event)
        }
        return events
    }

    /// Reads until the server ends the stream; returns the events seen on the way.
    func drainUntilClosed(timeout: TimeInterval = 10) throws -> [SSEEvent] {
        var events: [SSEEvent] = []
        let deadline = Date().addingTimeInterval(timeout)
        while !closed, Date() < deadline {
            if let event = try next(timeout: max(0.01, deadline.timeIntervalSinceNow)) { events.append(event) }
        }
        return events
    }

    // MARK: - Decoding

    /// Reads more bytes; false on timeout. Sets `closed` at end of stream.
    private func fill(until deadline: Date) throws -> Bool {
        let remaining = deadline.timeIntervalSinceNow
        guard remaining > 0, socket >= 0 else { return false }
        var poll = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard Glibc.poll(&poll, 1, Int32(remaining * 1000) + 1) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
        if count <= 0 {
            closed = true
            return true
        }
        raw.append(contentsOf: buffer[0..<count])
        return true
    }

    private func decodeChunks() {
        guard chunked else {
            body.append(contentsOf: raw)
            raw.removeAll()
            return
        }
        while true {
            if chunkRemaining > 0 {
                let take = min(chunkRemaining, raw.count)
                body.append(contentsOf: raw[..<take])
                raw.removeFirst(take)
                chunkRemaining -= take
                if chunkRemaining > 0 { return }
                if raw.count < 2 { chunkRemaining = -2; return }
                raw.removeFirst(2)
            }
            if chunkRemaining == -2 {
                guard raw.count >= 2 else { return }
                raw.removeFirst(2)
                chunkRemaining = 0
            }
            guard let end = Self.find([13, 10], in: raw) else { return }
            let size = Int(String(decoding: raw[..<end], as: UTF8.self), radix: 16) ?? 0
            raw.removeFirst(end + 2)
            if size == 0 {
                closed = true
                return
            }
            chunkRemaining = size
        }
    }

    private func parseEvent() -> SSEEvent? {
        decodeChunks()
        if ndjson { return parseLine() }
        while let end = Self.find([10, 10], in: body) {
            let block = String(decoding: body[..<end], as: UTF8.self)
            body.removeFirst(end + 2)
            var event = SSEEvent()
            var hasData = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    comments.append(String(line.dropFirst().trimmingCharacters(in: .whitespaces)))
                    continue
                }
                if line.hasPrefix("retry: "), let value = Int(line.dropFirst(7)) { retries.append(value) }
                if line.hasPrefix("id: ") { event.id = Int(line.dropFirst(4)) }
                if line.hasPrefix("event: ") { event.name = String(line.dropFirst(7)) }
                if line.hasPrefix("data: ") {
                    event.data += String(line.dropFirst(6))
                    hasData = true
                }
            }
            // As in EventSource: a block without data dispatches nothing.
            if hasData, !skipping.contains(event.name) { return event }
        }
        return nil
    }

    /// The next NDJSON line as an event (`{"event": "keep-alive"}` counts as a comment).
    private func parseLine() -> SSEEvent? {
        while let end = Self.find([10], in: body) {
            let line = Array(body[..<end])
            body.removeFirst(end + 1)
            guard case .object(let members)? = try? JSONParser.parse(line), case .string(let name)? = members["event"]
            else { continue }
            if name == "keep-alive" {
                comments.append(name)
                continue
            }
            var event = SSEEvent(name: name)
            if case .int(let id)? = members["id"] { event.id = id }
            if let data = members["data"] { event.data = String(decoding: data.encoded(), as: UTF8.self) }
            if !skipping.contains(name) { return event }
        }
        return nil
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if Array(haystack[index..<index + needle.count]) == needle { return index }
        }
        return nil
    }
}
