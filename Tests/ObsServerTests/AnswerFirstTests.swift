import Foundation
import ObservationCore
import Testing

@testable import ObsServer

#if canImport(Glibc)
    import Glibc
#endif

@Suite("Answers before the fan-out (AnswerFirst)")
struct AnswerFirstTests {
    @Test("unsent bytes are counted only once the bound passes the limit, and the count becomes the bound")
    func boundSparesCounts() {
        var bound: Int64 = 0
        var counts = 0
        var deferred = 0
        for _ in 0..<100 {  // a peer that reads: its queue is empty whenever it is counted
            if AnswerFirst.hasLittleUnsent(
                bound: &bound,
                count: {
                    counts += 1; return 0
                })
            {
                deferred += 1
            }
            bound += 350  // an answer of W1's size, with what libmicrohttpd adds
        }
        #expect(deferred == 100)
        #expect(counts == 8, "one count every 12 answers of 350 bytes, not one per answer")
        var stuck = Int64(5_000)  // a peer that does not read: counted every time, never deferred to
        counts = 0
        for _ in 0..<3 {
            #expect(
                !AnswerFirst.hasLittleUnsent(
                    bound: &stuck,
                    count: {
                        counts += 1; return 5_000
                    }))
        }
        #expect(counts == 3 && stuck == 5_000)
        var unknown = Int64.max  // a stream's bytes went through the socket: counted
        #expect(AnswerFirst.hasLittleUnsent(bound: &unknown, count: { 10 }) && unknown == 10)
        var failing = Int64(5_000)
        #expect(!AnswerFirst.hasLittleUnsent(bound: &failing, count: { nil }), "a failed count defers nothing")
    }

    @Test("a writer that never reads its answers cannot hold up the deliveries of its writes")
    func unreadAnswersHoldNothing() throws {
        try withServer { server, client in
            // Writes alternate between two objects, each with its own observer and stream: the
            // write stuck on its answer is the only one that can wake its stream.
            let objects = ["a", "b"]
            let reading = Locked(true)
            defer { reading.withLock { $0 = false } }
            var latest: [Locked<Int>] = []
            for object in objects {
                try client.createObject(object, values: ["n": 0])
                let id = try client.createObserver()
                try client.observe(id, object, "n", options: ["new"])
                latest.append(try follow(port: server.port, observer: id, while: reading))
            }
            // Open until the end: closing it would complete the request stuck on its answer.
            let (writer, sent) = try pipelineUnread(port: server.port, objects: objects, upTo: 20_000)
            defer { close(writer) }
            // The last write the server applied: once it no longer changes, the server is stuck
            // on an answer the writer does not read.
            var applied = [-1, -1]
            var stableSince = ContinuousClock.now
            // Bounded far above the 2 s it takes: ThreadSanitizer's pass takes a minute to fill the socket.
            try waitUntil(within: .seconds(120), every: 0.05) {
                for (index, object) in objects.enumerated() {
                    guard case .int(let value) = try client.get("/v1/objects/\(object)/values/n")["value"] else {
                        return false
                    }
                    if value != applied[index] { (applied[index], stableSince) = (value, .now) }
                }
                return ContinuousClock.now - stableSince > .milliseconds(500)
            }
            #expect(applied.max()! > 2 && applied.max()! < sent, "the server must stop on an answer it cannot write")
            try waitUntil(within: .seconds(3)) { latest[0].withLock { $0 } == applied[0] }
            try waitUntil(within: .seconds(3)) { latest[1].withLock { $0 } == applied[1] }
        }
    }

    /// The highest `new` an observer's stream has shown, read on a thread of its own (it keeps
    /// up, so the stream is never cut off) while `reading` holds.
    private func follow(port: UInt16, observer id: String, while reading: Locked<Bool>) throws -> Locked<Int> {
        let latest = Locked(0)
        let opened = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            guard let stream = try? SSEClient(port: port, path: "/v1/observers/\(id)/events") else { return }
            opened.signal()
            while reading.withLock({ $0 }) {
                guard let event = try? stream.next(timeout: 0.05), case .int(let value)? = event["new"] else {
                    continue
                }
                latest.withLock { $0 = max($0, value) }
            }
            stream.close()
        }
        guard opened.wait(timeout: .now() + 5) == .success else { throw TestClientError("no stream") }
        return latest
    }

    /// Sends `PUT {"value": i}` for i = 1, 2, … (to each object in turn) on a connection that never reads, until the
    /// sockets are full (no room for 300 ms) or `upTo` are sent; returns the socket, open, and
    /// how many went whole.
    private func pipelineUnread(port: UInt16, objects: [String], upTo limit: Int) throws
        -> (socket: Int32, sent: Int)
    {
        let socket = try connectLoopback(port: port, receiveBuffer: 4096)
        _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
        // The longest request id the server echoes: each answer is twice as long, so half as many
        // requests fill the server's socket (the ThreadSanitizer pass is slow at each of them).
        let longID = String(repeating: "r", count: RequestID.maxBytes)
        var whole = 0
        while whole < limit {
            let body = "{\"value\":\(whole + 1)}"
            var rest = Array(
                ("PUT /v1/objects/\(objects[(whole + 1) % objects.count])/values/n HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    + "X-Request-Id: \(longID)\r\n"
                    + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8)
            while !rest.isEmpty {
                let written = rest.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                if written > 0 {
                    rest.removeFirst(written)
                    continue
                }
                guard written < 0, errno == EAGAIN || errno == EWOULDBLOCK else {
                    close(socket)
                    throw TestClientError("send failed: \(errno)")
                }
                var ready = pollfd(fd: socket, events: Int16(POLLOUT), revents: 0)
                if poll(&ready, 1, 300) <= 0 { return (socket, whole) }  // full: the rest stays unsent
            }
            whole += 1
        }
        return (socket, whole)
    }
}
