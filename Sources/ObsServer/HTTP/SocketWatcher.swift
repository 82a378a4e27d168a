private import CLinux
import Foundation
import Logging
import ObservationCore

/// Waits for one kind of readiness on many sockets at once, without polling: one thread
/// blocks in `epoll_wait` and runs a socket's handler (once: `EPOLLONESHOT`) when it is ready.
/// An idle server's watcher threads sleep: no timer, no CPU. The daemon has two:
///
/// - **Hang-ups** (`.hangup`): every stream's socket, and the socket of a parked answer that
///   asks for it (a poll waiting for its first event), sits in this set for hang-up only
///   (`EPOLLRDHUP`: the peer closed; `EPOLLHUP`/`EPOLLERR`: a reset, or TCP gave up on the
///   peer), never for incoming data. Its handler ends the stream (a parked connection is
///   resumed so that libmicrohttpd sees the close). Peers that vanish without a word (a
///   pulled cable) are found by TCP itself: stream sockets get keep-alive probes and
///   `TCP_USER_TIMEOUT` (`configure(socket:)` on the listening socket, which every accepted
///   socket inherits), so a keep-alive write that nobody acknowledges fails the socket after
///   `peerTimeout`, which the watcher then reports like any other hang-up.
/// - **Room to write** (`.writable`): a parked stream whose direct write the socket did not
///   take whole waits here for the rest (see `StreamConnection`).
///
/// Thread-safety: `watch`/`unwatch` from any thread. A socket must be unwatched before it is
/// closed (libmicrohttpd releases a stream's state before it closes its socket, which is
/// where the daemon unwatches it). Tokens, not descriptors, identify sockets, so a
/// descriptor number reused by a later connection is never mistaken for an earlier one.
final class SocketWatcher: Sendable {
    /// What the watcher waits for.
    enum Readiness: Sendable {
        case hangup
        case writable
    }

    private struct State {
        var handlers: [UInt64: @Sendable () -> Void] = [:]
        var nextToken: UInt64 = 1
        var started = false
        var stopping = false
    }

    let readiness: Readiness
    /// How long TCP keeps trying to reach a silent peer before it fails the socket.
    let peerTimeout: Duration
    private let epoll: Int32
    /// Written to wake the thread when stopping (token 0).
    private let interrupt: Int32
    private let state = Locked(State())
    private let finished = DispatchSemaphore(value: 0)
    private let logger: Logger

    init(_ readiness: Readiness, peerTimeout: Duration, logger: Logger) throws {
        self.readiness = readiness
        self.peerTimeout = peerTimeout
        self.logger = logger
        epoll = clinux_epoll_create()
        interrupt = clinux_eventfd()
        guard epoll >= 0, interrupt >= 0, clinux_epoll_watch_readable(epoll, interrupt, 0) == 0 else {
            let reason = String(cString: strerror(errno))
            if epoll >= 0 { close(epoll) }
            if interrupt >= 0 { close(interrupt) }
            throw HTTPDaemonError(message: "cannot create the stream watcher's epoll set: \(reason)")
        }
    }

    deinit {
        close(epoll)
        close(interrupt)
    }

    func start() {
        state.withLock { $0.started = true }
        let thread = Thread { [self] in run() }
        thread.name = readiness == .hangup ? "obs-hangups" : "obs-writable"
        thread.start()
    }

    /// Stops the thread (after the daemon stopped: every socket is unwatched by then).
    func stop() {
        let running = state.withLock { state in
            defer { state.stopping = true }
            return state.started && !state.stopping
        }
        guard running else { return }
        var one: UInt64 = 1
        _ = write(interrupt, &one, MemoryLayout<UInt64>.size)
        finished.wait()
    }

    /// Sets a socket's TCP keep-alive (probes after half the peer timeout of silence) and
    /// `TCP_USER_TIMEOUT` (data unacknowledged for the peer timeout fails the socket). Set on
    /// the listening socket: every accepted socket inherits them (Linux copies them on accept).
    func configure(socket: Int32) {
        let timeout = max(1, Int32(peerTimeout.components.seconds))
        for (level, option, value) in [
            (SOL_SOCKET, SO_KEEPALIVE, Int32(1)),
            (Int32(IPPROTO_TCP), TCP_KEEPIDLE, max(1, timeout / 2)),
            (Int32(IPPROTO_TCP), TCP_KEEPINTVL, max(1, timeout / 6)),
            (Int32(IPPROTO_TCP), TCP_KEEPCNT, Int32(3)),
            (Int32(IPPROTO_TCP), TCP_USER_TIMEOUT, timeout * 1000),
        ] {
            var value = value
            if setsockopt(socket, level, option, &value, socklen_t(MemoryLayout<Int32>.size)) != 0 {
                logger.debug("setsockopt(\(option)) on a stream socket: \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Runs `handler` (once, on the watcher's thread) when `socket` is ready: its peer went
    /// away (`.hangup`), or it has room to write (`.writable`, or it failed). Returns the
    /// token to unwatch with, or nil when the socket could not be watched.
    ///
    /// The handler is in the table before the socket is in the epoll set (so a readiness
    /// reported at once finds it), and `epoll_ctl` runs after the lock: the lock guards the
    /// table only. A token is new for each call, and a socket is watched and unwatched by its
    /// owner in turn (never both at once), so no other call can reach this socket meanwhile.
    func watch(_ socket: Int32, handler: @escaping @Sendable () -> Void) -> UInt64? {
        let token = state.withLock { state in
            defer { state.nextToken += 1 }
            state.handlers[state.nextToken] = handler
            return state.nextToken
        }
        let added =
            readiness == .hangup
            ? clinux_epoll_watch_hangup(epoll, socket, token) : clinux_epoll_watch_writable(epoll, socket, token)
        guard added == 0 else {
            let reason = String(cString: strerror(errno))
            state.withLock { _ = $0.handlers.removeValue(forKey: token) }
            logger.debug("cannot watch a stream socket: \(reason)")
            return nil
        }
        return token
    }

    /// Stops watching `socket` (call before it is closed: the socket leaves the epoll set
    /// before this returns). Its handler leaves the table first, so a readiness reported
    /// meanwhile runs nothing.
    func unwatch(_ socket: Int32, token: UInt64) {
        state.withLock { _ = $0.handlers.removeValue(forKey: token) }
        _ = clinux_epoll_unwatch(epoll, socket)
    }

    private func run() {
        var tokens = [UInt64](repeating: 0, count: 64)
        while true {
            let count = tokens.withUnsafeMutableBufferPointer { clinux_epoll_wait(epoll, $0.baseAddress!, 64) }
            if count < 0 {
                if errno == EINTR { continue }
                logger.error("the stream watcher's epoll_wait failed: \(String(cString: strerror(errno)))")
                break
            }
            let handlers = state.withLock { state -> [@Sendable () -> Void]? in
                if state.stopping { return nil }
                return tokens[0..<Int(count)].compactMap { state.handlers.removeValue(forKey: $0) }
            }
            guard let handlers else { break }
            for handler in handlers { handler() }
        }
        finished.signal()
    }
}
