import Glibc
import ObservationCore

/// Sends a writer's answer before the fan-out its write causes: the deliveries a command makes
/// while a request is handled on a worker thread (the wakes of the parked streams it reached,
/// each a direct write to a socket) are deferred by the request, and made once libmicrohttpd has
/// written its answer (the request's completion). Their events are in the logs already, so a
/// read or a stream that comes meanwhile sees them; only the wake-ups wait, by one answer.
/// Only a small answer to a peer that reads is waited for (`HTTPDaemon.finish`): anything that
/// might not be written at once (a large answer, bytes piling up unread) has its deliveries made
/// at once, so no client can hold up the wakes of the logs its writes touch. What is unread is
/// bounded from the bytes answered on the connection, and counted only past the limit.
///
/// Per worker thread: the request being handled on it, as a thread-specific value (set and
/// cleared around the middleware chain; a worker handles one request at a time).
enum AnswerFirst {
    /// The largest answer, and the most bytes already waiting unread on its socket, with which
    /// a request defers its deliveries: below both, the answer is written in the same turn of
    /// libmicrohttpd's loop (a socket's send buffer starts at 16 KiB), so the delay is short.
    static let maxDeferringAnswerBytes = 4096

    /// What libmicrohttpd adds to a complete answer's headers at most: status line, `Date`,
    /// `Content-Length`, `Connection`, the blank line, and a `100 Continue` before it.
    static let daemonHeadBytes = 256

    /// Whether a socket has at most `maxDeferringAnswerBytes` queued unsent. `bound` is at least
    /// what is queued (what was written since the last count, plus that count): while it is
    /// that low, nothing need be counted; past it, `count` counts them (a system call, nil when
    /// it cannot), and the count becomes the bound. So a peer that reads costs a count every few
    /// kilobytes of answers, not one per answer, and one that does not is counted every time.
    static func hasLittleUnsent(bound: inout Int64, count: () -> Int64?) -> Bool {
        if bound <= Int64(maxDeferringAnswerBytes) { return true }
        guard let counted = count() else { return false }
        bound = counted
        return counted <= Int64(maxDeferringAnswerBytes)
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key for deferred deliveries")
        return key
    }()

    /// Runs `body` with `pending` as the request being handled on this thread.
    static func handling<T>(_ pending: PendingRequest, _ body: () -> T) -> T {
        pthread_setspecific(key, Unmanaged.passUnretained(pending).toOpaque())
        defer { pthread_setspecific(key, nil) }
        return body()
    }

    /// The store's deferral (`Store.deferDeliveries`): takes deliveries made while a request is
    /// handled on this thread; false (make them at once) on any other thread.
    static func deferDeliveries(_ deliveries: OutboxDeliveries) -> Bool {
        guard let pointer = pthread_getspecific(key) else { return false }
        // Borrowed: the request is being handled on this thread, which holds it.
        Unmanaged<PendingRequest>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.deferDeliveries(deliveries) }
        return true
    }
}
