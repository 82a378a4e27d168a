import Foundation
import ObservationCore

/// One event-stream connection: its body, and who has its socket (`StreamConnectionState`),
/// shared by libmicrohttpd's reader (on a worker thread), wakers (on any thread) and direct
/// writes.
///
/// **Direct writes.** A parked (suspended) connection is one libmicrohttpd leaves alone: it
/// has sent all it had and will not touch the socket until resumed. A wake then writes what
/// the body has straight to the socket, framed as libmicrohttpd would (a chunk for HTTP/1.1,
/// raw bytes for HTTP/1.0), and the connection stays parked: no resume, no hand-off to the
/// daemon's thread, one `send` per 16 KiB. A socket that does not take a whole write keeps the
/// rest in the state and waits in the `writable` watcher; it is sent before anything else.
/// The connection is resumed only to end (libmicrohttpd then writes the last chunk and closes).
///
/// **The lock.** Each event takes the lock once, changes the state, and gets back what to do
/// (suspend, resume, write, watch, shut down), done after the lock is released. The state
/// makes that safe: a resume is handed out only once the reader's suspend has returned, and
/// is the last thing done to the socket; a parked socket is written by the one thread the
/// state gave it to. One call stays under the lock: an abort's `shutdown` of a connection
/// libmicrohttpd has (see `abort()`).
///
/// Lifetime: `finish()` runs when libmicrohttpd releases the stream, before it closes the
/// socket; aborts and direct writes touch the socket only before that (a parked connection is
/// only released once resumed, and the resume comes after them), so they never reach a
/// descriptor that was closed (and perhaps reused by another connection).
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

    let body: any StreamBody
    /// The connection's socket (-1 when unknown).
    let socket: Int32
    let framing: Framing
    private let suspend: @Sendable () -> Void
    private let resume: @Sendable () -> Void
    /// Waits for room on the socket when a direct write was cut short.
    private let writable: SocketWatcher
    private let state: Locked<StreamConnectionState>

    /// The largest direct write (one chunk, one `send`): a small wake's events go in one.
    private static let directWriteBytes = 16 * 1024
    /// Room before the payload in the scratch buffer for a chunk's size line (`4000\r\n`).
    private static let sizeLineRoom = 8
    /// The size line's room, the payload, the chunk's closing CRLF.
    private static let scratch = ScratchBuffers(byteCount: sizeLineRoom + directWriteBytes + 2, kept: 4)

    /// `suspend` and `resume` park and un-park the connection (the daemon's calls): `suspend`
    /// only on libmicrohttpd's thread, in `read`; `resume` once per suspension, after it.
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
        state = Locked(StreamConnectionState(directWrites: self.framing != .daemonOnly))
    }

    /// Called by libmicrohttpd when the socket can take more: returns bytes written,
    /// 0 after parking the connection, or -1 to end the response.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            if state.withLock({ $0.readerLooks() }) == .end { return -1 }
            switch body.read(into: buffer) {
            case .bytes(let count): return count
            case .end: return -1
            case .wait:
                switch state.withLock({ $0.readerFoundNothing() }) {
                case .end: return -1
                case .read: continue  // woken while looking: look again
                case .suspend:
                    suspend()
                    // A wake that came meanwhile is written now (by this thread) or resumes it.
                    perform(state.withLock { $0.suspended() })
                    return 0
                }
            }
        }
    }

    /// Sends what the body has if the connection is parked (directly, or by un-parking it);
    /// otherwise makes the reader or the writer look again.
    func wake() {
        perform(state.withLock { $0.wake() })
    }

    /// Ends the stream at its next read, after what it has pending (server shutdown).
    func stop() {
        perform(state.withLock { $0.stop() })
    }

    /// Ends the stream now, dropping what it has pending: the client hung up, or fell so far
    /// behind that its next event left the buffer. A parked connection is resumed (its read
    /// ends it); one with a direct write under way is ended by its writer (it shuts the socket
    /// down, then resumes); one whose rest waits for room is shut down (the client does not
    /// read: libmicrohttpd's last chunk would wait for it too), then resumed. A connection
    /// libmicrohttpd has (perhaps blocked on a client that does not read) is shut down, so
    /// that the next send fails and libmicrohttpd closes the connection.
    func abort() {
        let action = state.withLock { state in
            let action = state.abort()
            // Under the lock: once it is released libmicrohttpd may free the connection (the
            // free callback waits for it) and close the socket, whose number may be reused.
            if case .shutdownSocket = action { shutdownSocket() }
            return action
        }
        perform(action)
    }

    /// libmicrohttpd released the stream (its socket closes next): nothing may touch it any more.
    func finish() {
        if state.withLock({ $0.freed() }) { body.finish() }
    }

    /// Does what a transition asked for, with no lock held.
    private func perform(_ action: StreamConnectionState.Action) {
        switch action {
        case .none, .shutdownSocket:  // `.shutdownSocket`: done under the lock (`abort`)
            break
        case .write:
            writeDirectly(unsent: [])
        case .resume:
            resume()
        case .shutdownAndResume:
            shutdownSocket()
            resume()
        case .unwatchShutdownAndResume(let token):
            writable.unwatch(socket, token: token)
            shutdownSocket()
            resume()
        case .unwatchAndWrite(let token, let unsent):
            writable.unwatch(socket, token: token)  // out of the set: the next wait adds it anew
            writeDirectly(unsent: unsent)
        case .watchWritable:
            assertionFailure("the writer watches for room itself")
        }
    }

    private func shutdownSocket() {
        if socket >= 0 { _ = shutdown(socket, Int32(SHUT_RDWR)) }
    }

    // MARK: - Direct writes (the connection parked)

    /// Writes `unsent`, then what the body has, until the body has nothing more, the socket is
    /// full (the rest waits for room), or the stream is over (then the connection is resumed
    /// to end it). Called by the one thread the state made the writer.
    private func writeDirectly(unsent first: [UInt8]) {
        Self.scratch.with { scratch in
            var unsent = first
            while true {
                let next = state.withLock { $0.writerLooks() }
                guard case .write = next else { return perform(next) }
                if !unsent.isEmpty {
                    guard let rest = transmit(unsent) else { return perform(state.withLock { $0.writeFailed() }) }
                    if !rest.isEmpty {
                        guard let room = waitForRoom(rest) else { return }
                        unsent = room
                    } else {
                        unsent = []
                    }
                    continue
                }
                let payload = UnsafeMutableRawBufferPointer(
                    rebasing: scratch[Self.sizeLineRoom..<(Self.sizeLineRoom + Self.directWriteBytes)])
                let (read, drained) = body.readDirectly(into: payload)
                switch read {
                case .bytes(let count):
                    guard let rest = transmit(Self.frame(count, in: scratch, framing: framing)) else {
                        return perform(state.withLock { $0.writeFailed() })
                    }
                    if !rest.isEmpty {
                        guard let room = waitForRoom(rest) else { return }
                        unsent = room
                    } else if drained {
                        // Nothing more to read: park, unless a wake came since `writerLooks`.
                        let next = state.withLock { $0.writerFoundNothing() }
                        guard case .write = next else { return perform(next) }
                    }
                case .end:
                    return perform(state.withLock { $0.bodyEnded() })
                case .wait:
                    let next = state.withLock { $0.writerFoundNothing() }
                    guard case .write = next else { return perform(next) }  // `.write`: woken while looking
                }
            }
        }
    }

    /// Keeps `rest` for when the socket has room (the watcher calls `roomToWrite` then).
    /// Returns it if the room came already (write it now), nil when this thread is done.
    private func waitForRoom(_ rest: [UInt8]) -> [UInt8]? {
        let next = state.withLock { $0.writeCutShort() }
        guard case .watchWritable = next else {
            perform(next)
            return nil
        }
        guard let token = writable.watch(socket, handler: { [weak self] in self?.roomToWrite() }) else {
            perform(state.withLock { $0.writeFailed() })
            return nil
        }
        switch state.withLock({ $0.watching(token: token, unsent: rest) }) {
        case .unwatchAndWrite(let token, let unsent):
            writable.unwatch(socket, token: token)
            return unsent
        case let other:
            perform(other)
            return nil
        }
    }

    /// The socket has room (or failed: the next `send` says so): go on writing.
    private func roomToWrite() {
        perform(state.withLock { $0.roomCame() })
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
