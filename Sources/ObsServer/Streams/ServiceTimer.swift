import Foundation
import ObservationCore

/// The one timer thread: lease expiry, stream heartbeats, the notification queue, the ends
/// of throttle windows (`flushThrottled`), token expiry (`expireTokens`), the end of polls'
/// waits and of streams opened with a JWT (at its `exp`).
///
/// It sleeps until the next deadline (the earliest lease, the next heartbeat, the
/// moment queued `idle` postings are due, the earliest waiting poll's deadline); queued `asap`
/// postings go out as soon as it wakes; `reschedule()` wakes it when a deadline may have moved
/// earlier (the store calls it when a command moved a lease or queued a posting, the hub's
/// waiting polls when one waits less long than all the others). No polling: an idle server wakes once per
/// heartbeat interval. What it decides to do is issued as commands (`expireLeases`,
/// `deliverQueued`): lease deadlines and queue times are wall-clock times in the state.
///
/// `act` carries a command out and says whether it did. On a cluster node only the keeper
/// does (through the cluster's log, waiting for it to be applied); the others leave leases
/// and queues to it and wake only for heartbeats.
final class ServiceTimer: Sendable {
    /// Carries out a background command; false when it did not (not the keeper, no database).
    typealias Act = @Sendable (Command.Action) -> Bool

    private let store: Store
    private let act: Act
    /// Whether this timer decides leases and queues (always on a single server).
    private let decides: @Sendable () -> Bool
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
        lastRequest: @escaping @Sendable () -> ContinuousClock.Instant,
        decides: @escaping @Sendable () -> Bool = { true }, act: Act? = nil
    ) {
        self.idleQuiet = idleQuiet
        self.store = store
        self.decides = decides
        self.act = act ?? { action in (try? store.as(.server).issue(action)) != nil }
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

    /// Expires due leases and delivers due postings; returns when to look again.
    private func decide() -> ContinuousClock.Instant {
        var failed = false
        if let lease = store.nextLeaseDeadline, lease <= Timestamp.now() { failed = !act(.expireLeases) || failed }
        if store.oldestQueued(.asap) != nil { failed = !act(.deliverQueued(posting: "asap")) || failed }
        if let due = store.nextThrottleDeadline, due <= Timestamp.now() { failed = !act(.flushThrottled) || failed }
        if let due = store.nextTokenDeadline, due <= Timestamp.now() { failed = !act(.expireTokens) || failed }
        var deadline = store.nextLeaseDeadline.map(Self.instant) ?? .now + heartbeatInterval
        if let due = store.nextThrottleDeadline { deadline = min(deadline, Self.instant(due)) }
        if let due = store.nextTokenDeadline { deadline = min(deadline, Self.instant(due)) }
        if let oldest = store.oldestQueued(.idle) {
            let due = min(Self.instant(oldest) + Self.idleMaxDelay, lastRequest() + idleQuiet)
            if due <= ContinuousClock.now {
                failed = !act(.deliverQueued(posting: "idle")) || failed
            } else {
                deadline = min(deadline, due)
            }
        }
        // A command that could not be carried out (the cluster's database is away) is tried
        // again in a second, not in a loop.
        return failed ? max(deadline, .now + .seconds(1)) : deadline
    }

    private func run() {
        var nextHeartbeat = ContinuousClock.now + heartbeatInterval
        while !state.withLock({ $0.stopped }) {
            let now = ContinuousClock.now
            if now >= nextHeartbeat {
                hub.heartbeat()
                nextHeartbeat = now + heartbeatInterval
            }
            var deadline = nextHeartbeat
            if decides() { deadline = min(deadline, decide()) }
            if let poll = hub.polls.expire(now: .now) { deadline = min(deadline, poll) }
            if let jwt = hub.expireCredentials(now: .now()) { deadline = min(deadline, Self.instant(jwt)) }
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
