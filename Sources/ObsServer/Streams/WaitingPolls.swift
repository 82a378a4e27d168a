import ObservationCore
import Synchronization

/// The polls that wait for their first event, and their deadlines (section 7.2's `wait`).
///
/// The timer thread (`ServiceTimer`) sleeps until the earliest deadline and ends the polls
/// whose wait ran out (`expire`); adding a poll with an earlier deadline than any wakes it
/// (`onEarlierDeadline`). No polling loop: a waiting poll is a parked connection, a waker in its
/// log and an entry here. Each poll is here until it ends (it removes itself).
///
/// Thread-safety: one lock; polls are ended after it is released (ending takes the poll's and
/// the log's locks, then this one to remove itself).
final class WaitingPolls: Sendable {
    private struct State {
        var polls: [String: WaitingPoll] = [:]
        var deadlines = DeadlineHeap<ContinuousClock.Instant>()
        /// The server is stopping: no poll waits any more.
        var stopping = false
    }

    /// The closure in a struct, so that `Locked` holds it in its concrete representation (see
    /// `Store.journalHandler`).
    private struct Hook: Sendable {
        let call: @Sendable () -> Void
    }

    private let state = Locked(State())
    private let earlier = Locked<Hook?>(nil)
    private let keys = Atomic<Int>(0)

    /// A key for a new poll's deadline.
    func nextKey() -> String { String(keys.add(1, ordering: .relaxed).newValue) }

    /// Runs `handler` (after the lock is released) when a poll's deadline is earlier than every
    /// other: the timer's signal to look again.
    func onEarlierDeadline(_ handler: @escaping @Sendable () -> Void) {
        earlier.withLock { $0 = Hook(call: handler) }
    }

    /// Adds a waiting poll; false when the server is stopping (then answer it at once).
    func add(_ poll: WaitingPoll) -> Bool {
        let (added, first) = state.withLock { state -> (Bool, Bool) in
            guard !state.stopping else { return (false, false) }
            let first = state.deadlines.first.map { poll.deadline < $0.deadline } ?? true
            state.polls[poll.key] = poll
            state.deadlines.schedule(poll.key, at: poll.deadline)
            return (true, first)
        }
        if first { earlier.withLock { $0 }?.call() }
        return added
    }

    /// Removes a poll that ended.
    func remove(_ poll: WaitingPoll) {
        state.withLock { state in
            state.polls[poll.key] = nil
            state.deadlines.cancel(poll.key)
        }
    }

    /// The polls waiting now.
    var count: Int { state.withLock { $0.polls.count } }

    /// Ends the polls whose wait ran out by `now` (they answer what their log has, perhaps
    /// nothing); returns the next deadline.
    func expire(now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let (due, next) = state.withLock { state -> ([WaitingPoll], ContinuousClock.Instant?) in
            var due: [WaitingPoll] = []
            while let first = state.deadlines.first, first.deadline <= now {
                _ = state.deadlines.popFirst()
                if let poll = state.polls.removeValue(forKey: first.id) { due.append(poll) }
            }
            return (due, state.deadlines.first?.deadline)
        }
        for poll in due {
            // A JWT's poll waits no longer than its `exp`, and then ends with `revoked`.
            if let credential = poll.credential, let expiresAt = credential.expiresAt, expiresAt <= Timestamp.now() {
                poll.end(.revoked(credential.revokedEvent("expired")))
            } else {
                poll.end(.answer)
            }
        }
        return next
    }

    /// Ends the polls opened with these tokens (by id, with why they ended) with `revoked`.
    func revoke(_ reasons: [String: String]) {
        let due = state.withLock { state -> [(WaitingPoll, Event)] in
            state.polls.values.compactMap { poll in
                guard let credential = poll.credential, let reason = reasons[credential.tokenID] else { return nil }
                return (poll, credential.revokedEvent(reason))
            }
        }
        for (poll, event) in due { poll.end(.revoked(event)) }
    }

    /// Answers every waiting poll 503 `unavailable` now (a cluster node cut off from its database).
    func cutOff() {
        for poll in state.withLock({ Array($0.polls.values) }) { poll.end(.unavailable) }
    }

    /// Answers every waiting poll now, and every later one at once: the server is stopping.
    func stop() {
        let polls = state.withLock { state in
            state.stopping = true
            return Array(state.polls.values)
        }
        for poll in polls { poll.end(.answer) }
    }
}
