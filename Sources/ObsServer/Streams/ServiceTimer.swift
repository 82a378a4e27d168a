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
/// `act` carries a command out and reports whether it did, at once (a single server) or later
/// from another thread (a cluster node: only the keeper does, through the cluster's log); the
/// timer never waits for it. While a duty's command is out, the timer does not issue it again
/// nor wake for its deadline (the report wakes it); a failure pauses the duties for a second.
/// The other nodes leave leases and queues to the keeper and wake only for heartbeats.
final class ServiceTimer: Sendable {
    /// Carries out a background command, then calls `done` once with whether it did (false:
    /// not the keeper, no database), on any thread, before or after it returns. Never blocks.
    typealias Act = @Sendable (Command.Action, _ done: @escaping @Sendable (Bool) -> Void) -> Void

    /// What the timer issues commands for: one of each at a time.
    private enum Duty: Hashable, Sendable {
        case leases, asap, throttled, tokens, idle
    }

    private struct State: Sendable {
        var stopped = false
        var rescheduled = false
        /// Duties whose command is out (issued, not reported yet).
        var pending: Set<Duty> = []
        /// `decide` is issuing: a report that comes meanwhile needs no wake-up (it looks after).
        var issuing = false
        /// After a failure, nothing is issued before this.
        var pausedUntil: ContinuousClock.Instant?
    }

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
    /// How long the duties pause after a command could not be carried out (the cluster's
    /// database is away): tried again in a second, not in a loop.
    static let retryDelay: Duration = .seconds(1)
    private let state = Locked(State())

    init(
        store: Store, hub: StreamHub, heartbeatInterval: Duration, idleQuiet: Duration,
        lastRequest: @escaping @Sendable () -> ContinuousClock.Instant,
        decides: @escaping @Sendable () -> Bool = { true }, act: Act? = nil
    ) {
        self.idleQuiet = idleQuiet
        self.store = store
        self.decides = decides
        self.act = act ?? { action, done in done((try? store.as(.server).issue(action)) != nil) }
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

    /// Issues `duty`'s command unless one is out (its report wakes the timer) or the duties
    /// pause; false when they pause (look again when the pause ends).
    private func issue(_ duty: Duty, _ action: Command.Action) -> Bool {
        let now = ContinuousClock.now
        let go = state.withLock { state -> Bool? in
            guard state.pausedUntil.map({ $0 <= now }) ?? true else { return nil }
            return state.pending.insert(duty).inserted
        }
        guard let go else { return false }
        guard go else { return true }
        act(action) { [self] done in
            let wake = state.withLock { state in
                state.pending.remove(duty)
                if !done { state.pausedUntil = .now + Self.retryDelay }
                return !state.issuing
            }
            if wake { reschedule() }
        }
        return true
    }

    /// Issues the commands due now (expire leases, deliver postings, flush throttle windows,
    /// expire tokens); returns when to look again.
    private func decide() -> ContinuousClock.Instant {
        state.withLock { $0.issuing = true }
        var issued = true  // false: something due waits for the pause to end
        if let lease = store.nextLeaseDeadline, lease <= Timestamp.now() { issued = issue(.leases, .expireLeases) }
        if store.oldestQueued(.asap) != nil { issued = issue(.asap, .deliverQueued(posting: "asap")) && issued }
        if let due = store.nextThrottleDeadline, due <= Timestamp.now() {
            issued = issue(.throttled, .flushThrottled) && issued
        }
        if let due = store.nextTokenDeadline, due <= Timestamp.now() {
            issued = issue(.tokens, .expireTokens) && issued
        }
        var idleDue: ContinuousClock.Instant?
        if let oldest = store.oldestQueued(.idle) {
            let due = min(Self.instant(oldest) + Self.idleMaxDelay, lastRequest() + idleQuiet)
            if due <= ContinuousClock.now {
                issued = issue(.idle, .deliverQueued(posting: "idle")) && issued
            } else {
                idleDue = due
            }
        }
        // A duty whose command is out wakes the timer when it reports, not by its deadline.
        let (pending, paused) = state.withLock { state in
            state.issuing = false
            return (state.pending, state.pausedUntil)
        }
        var deadline = ContinuousClock.now + heartbeatInterval
        if !pending.contains(.leases), let lease = store.nextLeaseDeadline { deadline = Self.instant(lease) }
        if !pending.contains(.throttled), let due = store.nextThrottleDeadline {
            deadline = min(deadline, Self.instant(due))
        }
        if !pending.contains(.tokens), let due = store.nextTokenDeadline { deadline = min(deadline, Self.instant(due)) }
        if let idleDue { deadline = min(deadline, idleDue) }
        // After a failure, what is due is tried again when the pause ends, not in a loop.
        if let paused, paused > ContinuousClock.now { deadline = issued ? max(deadline, paused) : paused }
        return deadline
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
