/// How long a cluster thread waits before it tries the database again: doubling from `first`
/// up to `limit`, back to `first` after a success.
///
/// The appender, its in-doubt resolution and the tailer retry from 50 ms up to 2 s; the
/// presence thread retries at its round's interval (`keeperInterval`, as before the split).
/// A value type: each thread keeps its own.
struct ClusterBackoff: Sendable, Equatable {
    let first: Duration
    let limit: Duration
    /// The delay the next failure waits.
    private(set) var next: Duration

    init(first: Duration = .milliseconds(50), limit: Duration = .seconds(2)) {
        self.first = first
        self.limit = max(first, limit)
        next = first
    }

    /// The delay to wait after a failure now; the one after it is twice as long (up to `limit`).
    mutating func delay() -> Duration {
        defer { next = min(next * 2, limit) }
        return next
    }

    /// Sleeps the calling thread for `delay()` (cluster threads only, never an HTTP worker).
    mutating func sleep() {
        sleepThread(delay())
    }

    /// A success: the next failure waits `first` again.
    mutating func reset() {
        next = first
    }
}
