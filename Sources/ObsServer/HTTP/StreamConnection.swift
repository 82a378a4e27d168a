import Foundation
import ObservationCore

/// One event-stream connection: its body, and the parked/woken state shared by
/// libmicrohttpd's reader (on a worker thread) and wakers (on any thread).
///
/// Lost wake-ups cannot happen: a reader that found nothing parks only if no
/// wake arrived since it looked (`notified`), and it checks that under the same
/// lock a waker takes to resume it.
///
/// Lifetime: `finish()` runs when libmicrohttpd releases the stream, before it closes the
/// socket; `abort()` touches the socket only before that, under the same lock, so it never
/// reaches a descriptor that was closed (and perhaps reused by another connection).
final class StreamConnection: Sendable {
    private struct Flags {
        var suspended = false
        var notified = false
        /// Ends at the next read once nothing is pending (server shutdown).
        var stopping = false
        /// Ends at the next read, whatever is pending (the client went away, or fell behind).
        var aborted = false
        var finished = false
    }

    let body: any StreamBody
    /// The connection's socket (-1 when unknown).
    let socket: Int32
    private let suspend: @Sendable () -> Void
    private let resume: @Sendable () -> Void
    private let flags = Locked(Flags())

    /// `suspend` and `resume` park and un-park the connection (the daemon's calls); they are
    /// only ever called under this object's lock.
    init(
        body: any StreamBody, socket: Int32, suspend: @escaping @Sendable () -> Void,
        resume: @escaping @Sendable () -> Void
    ) {
        self.body = body
        self.socket = socket
        self.suspend = suspend
        self.resume = resume
    }

    /// Called by libmicrohttpd when the socket can take more: returns bytes written,
    /// 0 after parking the connection, or -1 to end the response.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let aborted = flags.withLock { flags in
                flags.notified = false
                return flags.aborted
            }
            if aborted { return -1 }
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

    /// Un-parks the connection if it is parked; otherwise makes the reader look again.
    func wake() {
        flags.withLock { flags in
            flags.notified = true
            if flags.suspended {
                flags.suspended = false
                resume()
            }
        }
    }

    /// Ends the stream at its next read, after what it has pending (server shutdown).
    func stop() {
        flags.withLock { $0.stopping = true }
        wake()
    }

    /// Ends the stream now, dropping what it has pending: the client hung up, or fell so far
    /// behind that its next event left the buffer. A parked connection is resumed (its read
    /// ends it); a busy one, perhaps blocked on a client that does not read, is shut down so
    /// that libmicrohttpd's next send fails and it closes the connection.
    func abort() {
        flags.withLock { flags in
            guard !flags.finished, !flags.aborted else { return }
            flags.aborted = true
            if flags.suspended {
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
}
