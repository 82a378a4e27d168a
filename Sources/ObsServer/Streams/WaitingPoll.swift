import ObservationCore

/// A poll that found nothing to answer and waits for its first event (section 7.2's `wait`).
///
/// It costs no CPU while it waits: its connection is parked (`answer`, a `DeferredAnswer`), its
/// log holds a one-shot waker (`EventLog.waitForEvents`) and `WaitingPolls` its deadline, which
/// the timer thread watches. It ends exactly once (`end`): when its log shows an event after
/// its cursor (or closes), when its wait runs out, when its client hangs up, or when the
/// server stops or the cluster node is cut off. Ending leaves the log and the deadline list,
/// runs `close` (the stream count it held), then resolves the answer; the answer itself is made
/// on a worker thread once the connection is resumed (`produce`), never on the thread that woke it.
///
/// Thread-safety: its own lock, taken before the log's (`watch` registers with the log under
/// it, so an `end` racing a wake-up never leaves a waker behind in the log).
final class WaitingPoll: Sendable {
    /// How a waiting poll ends.
    enum Ending {
        /// Answer with what the log has (perhaps nothing, when the wait ran out).
        case answer
        /// Answer 503 `unavailable` (a cluster node cut off from the database).
        case unavailable
        /// Close unanswered (the client went away).
        case hangup
        /// Answer this `revoked` event alone: the token it was opened with ended (section 13).
        case revoked(Event)
    }

    private struct State {
        var ended = false
        var waitToken: Int?
    }

    /// The key of its deadline in `WaitingPolls`.
    let key: String
    let deadline: ContinuousClock.Instant
    /// What the daemon parks the connection on; it hangs up through `end(.hangup)`.
    let answer: DeferredAnswer
    private let log: EventLog
    private let cursor: Int
    private let produce: @Sendable () -> Reply
    /// The answer of a poll whose token ended: the `revoked` event alone.
    private let produceRevoked: @Sendable (Event) -> Reply
    /// The scoped token it was opened with, if any.
    let credential: StreamCredential?
    private let close: @Sendable () -> Void
    private let polls: WaitingPolls
    private let state = Locked(State())

    /// A poll waiting for an event after `cursor` in `log` until `deadline`; `produce` makes
    /// its answer, `close` runs once when it ends.
    init(
        log: EventLog, cursor: Int, deadline: ContinuousClock.Instant, polls: WaitingPolls,
        credential: StreamCredential? = nil, produce: @escaping @Sendable () -> Reply,
        produceRevoked: @escaping @Sendable (Event) -> Reply = { _ in .now(APIError.forbidden.response) },
        close: @escaping @Sendable () -> Void
    ) {
        self.key = polls.nextKey()
        self.log = log
        self.cursor = cursor
        self.credential = credential
        self.produceRevoked = produceRevoked
        // A JWT's poll waits no longer than its `exp`.
        var deadline = deadline
        if let expiresAt = credential?.expiresAt {
            deadline = min(
                deadline, .now + .milliseconds(max(0, expiresAt.milliseconds - Timestamp.now().milliseconds)))
        }
        self.deadline = deadline
        self.polls = polls
        self.produce = produce
        self.close = close
        answer = DeferredAnswer()
        answer.onHangup { [weak self] in self?.end(.hangup) }
    }

    /// Waits for the log to show an event after the cursor; ends at once if it does already.
    /// Runs again each time the log wakes it (a wake-up may bring nothing for this cursor).
    func watch() {
        let ready = state.withLock { state -> Bool in
            guard !state.ended else { return false }
            guard let token = log.waitForEvents(after: cursor, { [weak self] in self?.watch() }) else { return true }
            state.waitToken = token
            return false
        }
        if ready { end(.answer) }
    }

    /// Ends the poll (the first call only).
    func end(_ ending: Ending) {
        let token = state.withLock { state -> Int?? in
            guard !state.ended else { return nil }
            state.ended = true
            defer { state.waitToken = nil }
            return .some(state.waitToken)
        }
        guard let token else { return }
        if let token { log.cancelWait(token) }
        polls.remove(self)
        close()
        switch ending {
        case .answer: answer.resolve(produce)
        case .unavailable:
            answer.resolve(
                with: .now(
                    APIError(ClusterNode.unavailable("the node is not connected to the cluster's database now"))
                        .response))
        case .hangup: answer.resolve(with: .close)
        case .revoked(let event): answer.resolve { [produceRevoked] in produceRevoked(event) }
        }
    }
}
