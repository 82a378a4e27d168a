import Glibc
import ObservationCore

/// Sends a writer's answer before the fan-out its write causes: the deliveries a command makes
/// while a request is handled on a worker thread (the wakes of the parked streams it reached,
/// each a direct write to a socket) are held by the request, and made once libmicrohttpd has
/// written its answer (the request's completion). Their events are in the logs already, so a
/// read or a stream that comes meanwhile sees them; only the wake-ups wait, by one answer.
///
/// Per worker thread: the request being handled on it, as a thread-specific value (set and
/// cleared around the middleware chain; a worker handles one request at a time).
enum AnswerFirst {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key for held deliveries")
        return key
    }()

    /// Runs `body` with `pending` as the request being handled on this thread.
    static func handling<T>(_ pending: PendingRequest, _ body: () -> T) -> T {
        pthread_setspecific(key, Unmanaged.passUnretained(pending).toOpaque())
        defer { pthread_setspecific(key, nil) }
        return body()
    }

    /// The store's holder (`Store.holdDeliveries`): takes deliveries made while a request is
    /// handled on this thread; false (make them at once) on any other thread.
    static func hold(_ deliveries: OutboxDeliveries) -> Bool {
        guard let pointer = pthread_getspecific(key) else { return false }
        Unmanaged<PendingRequest>.fromOpaque(pointer).takeUnretainedValue().hold(deliveries)
        return true
    }
}
