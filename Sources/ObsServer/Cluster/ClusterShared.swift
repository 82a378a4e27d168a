private import CLinux
import Dispatch
import Foundation
import Glibc
import Logging
import ObservationCore
import Synchronization

/// What a cluster node's three threads (`ClusterAppender`, `ClusterTailer`, `ClusterPresence`)
/// and the server's calls (`ClusterNode`) share: the state, the position applied, the hooks,
/// and the signals that wake each thread. The threads never call one another; they change
/// the state and wake one another through this object.
///
/// Thread-safety: every member may be used from any thread. Locks:
/// - `state` guards `ClusterState`; it is never held across I/O, a callout or another lock;
/// - `hooks` guards the server's hooks, which are read under it and called after it;
/// - `presenceSignal` is held only around the presence thread's timed wait, which reads
///   `state.stopping` inside it (presence signal → state), and around a wake-up.
/// `applied` is atomic (written by the tailer, and by `start` before the tailer runs).
final class ClusterShared: Sendable {
    let settings: ClusterSettings
    let logger: Logger
    let state = Locked(ClusterState())
    /// The last log position applied to the replica (0 while a rebuild starts over).
    let applied = Atomic<Int>(0)
    private let hooks = Locked(ClusterNode.Hooks())
    /// Signalled when a command is queued (and at stop): the appender's wake-up.
    private let appendSignal = DispatchSemaphore(value: 0)
    private let presenceSignal = NSCondition()
    /// An eventfd written to wake the tailer (a commit of this node's, a read barrier, shutdown).
    let tailerWake: Int32
    /// Signalled by each thread as it ends.
    private let finished = DispatchSemaphore(value: 0)

    init(settings: ClusterSettings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        tailerWake = clinux_eventfd()
    }

    deinit {
        close(tailerWake)
    }

    var isKeeper: Bool { state.withLock { $0.keeper && $0.tag != nil } }
    var isStopping: Bool { state.withLock { $0.stopping } }

    // MARK: - Hooks

    func on(_ hooks: ClusterNode.Hooks) {
        self.hooks.withLock { $0 = hooks }
    }

    /// The node lost its registration or stopped applying: the server closes its streams.
    func cutOff() { hooks.withLock { $0.cutOff }() }
    /// The node became the keeper: the server's timer looks at leases and queues again.
    func becameKeeper() { hooks.withLock { $0.keeper }() }

    /// The replica cannot go on (it would diverge): stop applying, report unhealthy.
    func halt(_ reason: String) {
        logger.critical("cluster node \(settings.nodeID) stops applying the log: \(reason)")
        state.withLock { $0.broken = reason }
        cutOff()
    }

    /// Answers the waiters of `origins` 503 (their commands never reached the log).
    func fail(_ origins: [Int], _ reason: String) {
        let waiters = state.withLock { $0.removeWaiters(origins) }
        for waiter in waiters { waiter.resolve(.failure(ClusterNode.unavailable(reason))) }
    }

    // MARK: - Waking the threads

    func wakeAppender() { appendSignal.signal() }

    /// The appender's wait for commands: at most `timeout`; whether it was woken.
    func waitForAppends(timeout: Duration) -> Bool {
        appendSignal.wait(timeout: .now() + timeout.inSeconds) == .success
    }

    func wakeTailer() {
        var one: UInt64 = 1
        _ = write(tailerWake, &one, 8)
    }

    /// Resets the tailer's wake-up (after its wait returned).
    func drainTailerWake() {
        var value: UInt64 = 0
        _ = read(tailerWake, &value, 8)
    }

    func wakePresence() {
        presenceSignal.lock()
        presenceSignal.broadcast()
        presenceSignal.unlock()
    }

    /// The presence thread's wait between rounds: `interval`, or until woken or stopping.
    func waitForPresence(_ interval: Duration) {
        presenceSignal.lock()
        if !isStopping { _ = presenceSignal.wait(until: Date(timeIntervalSinceNow: interval.inSeconds)) }
        presenceSignal.unlock()
    }

    /// Called by each thread as it ends.
    func threadFinished() { finished.signal() }

    /// Waits for `count` threads to end, at most `timeout` for each.
    func waitForThreads(_ count: Int, timeout: Duration) {
        for _ in 0..<count { _ = finished.wait(timeout: .now() + timeout.inSeconds) }
    }
}
