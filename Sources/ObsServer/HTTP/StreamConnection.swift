import ObservationCore

/// One event-stream connection: its body, and the parked/woken state shared by
/// libmicrohttpd's reader (on a worker thread) and wakers (on any thread).
///
/// Lost wake-ups cannot happen: a reader that found nothing parks only if no
/// wake arrived since it looked (`notified`), and it checks that under the same
/// lock a waker takes to resume it.
final class StreamConnection: Sendable {
    private struct Flags {
        var suspended = false
        var notified = false
        var stopping = false
    }

    let body: any StreamBody
    private let suspend: @Sendable () -> Void
    private let resume: @Sendable () -> Void
    private let flags = Locked(Flags())

    /// `suspend` and `resume` park and un-park the connection (the daemon's calls); they are
    /// only ever called under this object's lock.
    init(body: any StreamBody, suspend: @escaping @Sendable () -> Void, resume: @escaping @Sendable () -> Void) {
        self.body = body
        self.suspend = suspend
        self.resume = resume
    }

    /// Called by libmicrohttpd when the socket can take more: returns bytes written,
    /// 0 after parking the connection, or -1 to end the response.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            flags.withLock { $0.notified = false }
            switch body.read(into: buffer) {
            case .bytes(let count): return count
            case .end: return -1
            case .wait:
                let parked = flags.withLock { flags -> Bool? in
                    if flags.stopping { return nil }
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

    /// Ends the stream at its next read (server shutdown), waking it if parked.
    func stop() {
        flags.withLock { $0.stopping = true }
        wake()
    }
}
