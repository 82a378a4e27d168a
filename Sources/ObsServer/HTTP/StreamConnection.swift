import Foundation
import ObservationCore

/// One event-stream connection: its body, and the parked/woken state shared by
/// libmicrohttpd's reader (on a worker thread), wakers (on any thread) and direct writes.
///
/// **Direct writes.** A parked (suspended) connection is one libmicrohttpd leaves alone: it
/// has sent all it had and will not touch the socket until resumed. A wake then writes what
/// the body has straight to the socket, framed as libmicrohttpd would (a chunk for HTTP/1.1,
/// raw bytes for HTTP/1.0), and the connection stays parked: no resume, no hand-off to the
/// daemon's thread, one `send` per 16 KiB. A socket that does not take a whole write keeps the
/// rest here and waits in the `writable` watcher; it is sent before anything else. The
/// connection is resumed only to end (libmicrohttpd then writes the last chunk and closes).
///
/// Lost wake-ups cannot happen: a reader that found nothing parks only if no wake arrived
/// since it looked (`notified`), and it checks that under the same lock a waker takes to
/// resume it or to start writing. At most one thread writes: libmicrohttpd's reader while
/// the connection is not parked, the one that set `writing` while it is.
///
/// Lifetime: `finish()` runs when libmicrohttpd releases the stream, before it closes the
/// socket; `abort()` and direct writes touch the socket only before that (a parked
/// connection is only resumed, and so only released, once no write is under way), so they
/// never reach a descriptor that was closed (and perhaps reused by another connection).
final class StreamConnection: Sendable {
    /// How bytes go on the wire, as libmicrohttpd frames a body of unknown length.
    enum Framing: Sendable {
        /// HTTP/1.1: each write is one chunk.
        case chunked
        /// HTTP/1.0: the bytes as they are (the body ends when the connection closes).
        case raw
        /// Unknown: no direct writes, every byte goes through libmicrohttpd.
        case daemonOnly
    }

    private struct Flags {
        var suspended = false
        var notified = false
        /// Ends at the next read once nothing is pending (server shutdown).
        var stopping = false
        /// Ends at the next read, whatever is pending (the client went away, or fell behind).
        var aborted = false
        /// The body said it is over (seen by a direct write): the next read ends the response.
        var ended = false
        var finished = false
        /// A thread is writing to the parked connection's socket.
        var writing = false
        /// The part of a direct write the socket did not take yet (sent before anything else).
        var unsent: [UInt8] = []
        /// The `writable` watcher's token while `unsent` waits for room.
        var waitingForRoom: UInt64?
    }

    let body: any StreamBody
    /// The connection's socket (-1 when unknown).
    let socket: Int32
    let framing: Framing
    private let suspend: @Sendable () -> Void
    private let resume: @Sendable () -> Void
    /// Waits for room on the socket when a direct write was cut short.
    private let writable: SocketWatcher
    private let flags = Locked(Flags())

    /// The largest direct write (one chunk, one `send`): a small wake's events go in one.
    private static let directWriteBytes = 16 * 1024
    /// Room before the payload in the scratch buffer for a chunk's size line (`4000\r\n`).
    private static let sizeLineRoom = 8
    /// The size line's room, the payload, the chunk's closing CRLF.
    private static let scratch = ScratchBuffers(byteCount: sizeLineRoom + directWriteBytes + 2, kept: 4)

    /// `suspend` and `resume` park and un-park the connection (the daemon's calls); they are
    /// only ever called under this object's lock.
    init(
        body: any StreamBody, socket: Int32, framing: Framing, writable: SocketWatcher,
        suspend: @escaping @Sendable () -> Void, resume: @escaping @Sendable () -> Void
    ) {
        self.body = body
        self.socket = socket
        self.framing = socket >= 0 ? framing : .daemonOnly
        self.writable = writable
        self.suspend = suspend
        self.resume = resume
    }

    /// Called by libmicrohttpd when the socket can take more: returns bytes written,
    /// 0 after parking the connection, or -1 to end the response.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let over = flags.withLock { flags in
                flags.notified = false
                return flags.aborted || flags.ended
            }
            if over { return -1 }
            switch body.read(into: buffer) {
            case .bytes(let count): return count
            case .end: return -1
            case .wait:
                let parked = flags.withLock { flags -> Bool? in
                    if flags.stopping || flags.aborted { return nil }
                    if flags.notified { return false }
                    flags.suspended = true
                    suspend()
                    return true
                }
                switch parked {
                case nil: return -1
                case true?: return 0
                case false?: continue  // woken while looking: look again
                }
            }
        }
    }

    /// Sends what the body has if the connection is parked (directly, or by un-parking it);
    /// otherwise makes the reader look again.
    func wake() {
        let write = flags.withLock { flags -> Bool in
            flags.notified = true
            guard flags.suspended, !flags.writing, flags.waitingForRoom == nil else { return false }
            if framing == .daemonOnly || flags.stopping || flags.aborted {
                flags.suspended = false
                resume()
                return false
            }
            flags.writing = true
            return true
        }
        if write { writeDirectly() }
    }

    /// Ends the stream at its next read, after what it has pending (server shutdown).
    func stop() {
        flags.withLock { $0.stopping = true }
        wake()
    }

    /// Ends the stream now, dropping what it has pending: the client hung up, or fell so far
    /// behind that its next event left the buffer. A parked connection is resumed (its read
    /// ends it) unless a direct write is under way (the writer resumes it when it sees the
    /// abort; the shutdown makes its `send` fail at once). A connection blocked on a client
    /// that does not read (parked with bytes waiting for room, or busy in libmicrohttpd) is
    /// shut down, so that the next send fails and libmicrohttpd closes the connection.
    func abort() {
        flags.withLock { flags in
            guard !flags.finished, !flags.aborted else { return }
            flags.aborted = true
            if let token = flags.waitingForRoom {
                // The client does not read: libmicrohttpd's last chunk would wait for it too.
                writable.unwatch(socket, token: token)
                flags.waitingForRoom = nil
                _ = shutdown(socket, Int32(SHUT_RDWR))
            }
            if flags.suspended, !flags.writing {
                flags.suspended = false
                resume()
            } else if socket >= 0 {
                _ = shutdown(socket, Int32(SHUT_RDWR))
            }
        }
    }

    /// libmicrohttpd released the stream (its socket closes next): nothing may touch it any more.
    func finish() {
        flags.withLock { $0.finished = true }
        body.finish()
    }

    // MARK: - Direct writes (the connection parked)

    /// Writes until the body has nothing more, the socket is full (the rest waits for room),
    /// or the stream is over (then the connection is resumed to end it). Called by the one
    /// thread that set `writing`.
    private func writeDirectly() {
        Self.scratch.with { scratch in
            while true {
                let (unsent, aborted) = flags.withLock { flags in
                    flags.notified = false
                    defer { flags.unsent = [] }
                    return (flags.unsent, flags.aborted)
                }
                if aborted { return endWriting() }
                if !unsent.isEmpty {
                    guard let rest = transmit(unsent) else { return endWriting(failed: true) }
                    if !rest.isEmpty { return waitForRoom(rest) }
                    continue
                }
                let payload = UnsafeMutableRawBufferPointer(
                    rebasing: scratch[Self.sizeLineRoom..<(Self.sizeLineRoom + Self.directWriteBytes)])
                switch body.read(into: payload) {
                case .bytes(let count):
                    guard let rest = transmit(Self.frame(count, in: scratch, framing: framing)) else {
                        return endWriting(failed: true)
                    }
                    if !rest.isEmpty { return waitForRoom(rest) }
                case .end:
                    return endWriting(ended: true)
                case .wait:
                    let done = flags.withLock { flags -> Bool in
                        if flags.notified && !flags.aborted { return false }  // woken while looking: look again
                        flags.writing = false
                        if flags.stopping || flags.aborted {
                            flags.suspended = false
                            resume()
                        }
                        return true
                    }
                    if done { return }
                }
            }
        }
    }

    /// Stops writing and resumes the connection, whose next read ends the response (`ended`:
    /// the body said it is over; `failed`: the socket refused the bytes, so the client is gone).
    private func endWriting(ended: Bool = false, failed: Bool = false) {
        flags.withLock { flags in
            flags.ended = flags.ended || ended
            if failed {
                flags.aborted = true
                // Part of a chunk may be out: libmicrohttpd's last chunk must not follow it.
                _ = shutdown(socket, Int32(SHUT_RDWR))
                flags.unsent = []
            }
            flags.writing = false
            flags.suspended = false
            resume()
        }
    }

    /// Keeps `rest` for when the socket has room (the watcher calls back then).
    private func waitForRoom(_ rest: [UInt8]) {
        let watched = flags.withLock { flags -> Bool in
            guard !flags.aborted else { return false }
            flags.unsent = rest
            flags.waitingForRoom = writable.watch(socket) { [weak self] in self?.roomToWrite() }
            guard flags.waitingForRoom != nil else { return false }
            flags.writing = false
            return true
        }
        if !watched { endWriting(failed: true) }
    }

    /// The socket has room (or failed: the next `send` says so): go on writing.
    private func roomToWrite() {
        let write = flags.withLock { flags -> Bool in
            guard let token = flags.waitingForRoom else { return false }  // aborted meanwhile
            writable.unwatch(socket, token: token)  // out of the set: the next wait adds it anew
            flags.waitingForRoom = nil
            flags.writing = true
            return true
        }
        if write { writeDirectly() }
    }

    /// Sends what it can of `bytes` without blocking: returns what the socket did not take
    /// (empty when all went), or nil when the socket failed.
    private func transmit(_ bytes: UnsafeRawBufferPointer) -> [UInt8]? {
        var offset = 0
        while offset < bytes.count {
            let sent = send(
                socket, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            if sent > 0 {
                offset += sent
            } else if sent < 0 && errno == EINTR {
                continue
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                return Array(bytes[offset...])
            } else {
                return nil
            }
        }
        return []
    }

    private func transmit(_ bytes: [UInt8]) -> [UInt8]? {
        bytes.withUnsafeBytes { transmit($0) }
    }

    /// The bytes to send for a payload of `count` bytes at `sizeLineRoom`: the payload as it
    /// is (`raw`), or framed as one chunk (its size in hex, CRLF, the payload, CRLF).
    private static func frame(_ count: Int, in scratch: UnsafeMutableRawBufferPointer, framing: Framing)
        -> UnsafeRawBufferPointer
    {
        let end = sizeLineRoom + count
        guard framing == .chunked else { return UnsafeRawBufferPointer(rebasing: scratch[sizeLineRoom..<end]) }
        var start = sizeLineRoom - 2
        scratch[start] = UInt8(ascii: "\r")
        scratch[start + 1] = UInt8(ascii: "\n")
        var size = count
        repeat {
            start -= 1
            let digit = UInt8(size & 0xF)
            scratch[start] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
            size >>= 4
        } while size > 0
        scratch[end] = UInt8(ascii: "\r")
        scratch[end + 1] = UInt8(ascii: "\n")
        return UnsafeRawBufferPointer(rebasing: scratch[start..<(end + 2)])
    }
}
