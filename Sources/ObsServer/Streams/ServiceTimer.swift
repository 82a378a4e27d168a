import Foundation
import ObservationCore

/// The one timer thread: lease expiry, stream heartbeats and the notification queue.
///
/// It sleeps until the next deadline (the earliest lease, the next heartbeat, the
/// moment queued `idle` postings are due); queued `asap` postings go out as soon as it wakes;
/// `reschedule()` wakes it when a deadline may have moved earlier (the store calls it when a
/// command moved a lease or queued a posting). No polling: an idle server wakes once per
/// heartbeat interval. What it decides to do is issued as commands (`expireLeases`,
/// `deliverQueued`): lease deadlines and queue times are wall-clock times in the state.
final class ServiceTimer: Sendable {
    private let store: Store
    private let hub: StreamHub
    private let heartbeatInterval: Duration
    private let lastRequest: @Sendable () -> ContinuousClock.Instant
    private let condition = NSCondition()

    /// `idle` postings wait for this much quiet (no request)…
    private let idleQuiet: Duration
    /// …but never longer than this after they were queued.
    static let idleMaxDelay: Duration = .seconds(1)
    private let state = Locked((stopped: false, rescheduled: false))

    init(
        store: Store, hub: StreamHub, heartbeatInterval: Duration, idleQuiet: Duration,
        lastRequest: @escaping @Sendable () -> ContinuousClock.Instant
    ) {
        self.idleQuiet = idleQuiet
        self.store = store
        self.hub = hub
        self.heartbeatInterval = heartbeatInterval
        self.lastRequest = lastRequest
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "obs-timer"
        thread.start()
    }

    func stop() {
        state.withLock { $0.stopped = true }
        reschedule()
    }

    /// Wakes the timer to look at its deadlines again.
    func reschedule() {
        condition.lock()
        state.withLock { $0.rescheduled = true }
        condition.signal()
        condition.unlock()
    }

    /// The monotonic instant of a wall-clock time (for sleeping until it).
    private static func instant(_ time: Timestamp) -> ContinuousClock.Instant {
        ContinuousClock.now + .milliseconds(time.milliseconds - Timestamp.now().milliseconds)
    }

    private func run() {
        var nextHeartbeat = ContinuousClock.now + heartbeatInterval
        while !state.withLock({ $0.stopped }) {
            let now = ContinuousClock.now
            if now >= nextHeartbeat {
                hub.heartbeat()
                nextHeartbeat = now + heartbeatInterval
            }
            if let lease = store.nextLeaseDeadline, lease <= Timestamp.now() { store.expireLeases() }
            if store.oldestQueued(.asap) != nil { store.flushQueued(.asap) }
            var deadline = min(nextHeartbeat, store.nextLeaseDeadline.map(Self.instant) ?? nextHeartbeat)
            if let oldest = store.oldestQueued(.idle) {
                let due = min(Self.instant(oldest) + Self.idleMaxDelay, lastRequest() + idleQuiet)
                if due <= ContinuousClock.now {
                    store.flushQueued(.idle)
                } else {
                    deadline = min(deadline, due)
                }
            }
            condition.lock()
            if !state.withLock({ $0.rescheduled }), deadline > ContinuousClock.now {
                _ = condition.wait(
                    until: Date(timeIntervalSinceNow: (deadline - ContinuousClock.now).inSeconds + 0.001))
            }
            state.withLock { $0.rescheduled = false }
            condition.unlock()
        }
    }
}
