import Synchronization

/// The observation service's state, and the one door to change it: `execute(command)`.
///
/// Thread-safe: all state lives in one `StoreState` behind one lock (`Locked`). A command is
/// applied under the lock; its effects (events into logs, streams to wake, the timer to
/// tell) are queued there and performed by the `Outbox` after the lock is released, in
/// apply order. Reads take the lock once and return value snapshots. Nothing is called out
/// while the lock is held. A command that is refused has changed nothing and taken no revision.
///
/// Clients' reads and commands go through a session (`store.as(principal)`, `StoreSession`):
/// its convenience methods (`setValue`, `observe`, …) issue a command as the session's caller,
/// stamped with the wall clock's time and fresh random ids (the inputs apply may not make
/// itself), execute it and unwrap its answer. What is left here is the server's own.
public final class Store: Sendable {
    let state: Locked<StoreState>
    let outbox = Outbox()
    /// The committer's wake-up call. Boxed: a bare closure as a lock's generic state is
    /// re-wrapped in a reabstraction thunk by every inout access, a chain that grows per call.
    let journalHandler = Locked<JournalHandler?>(nil)
    /// Who may defer a command's deliveries (see `deferDeliveries`).
    let deliveryDeferral = Locked<DeliveryDeferral?>(nil)
    /// The revision of the last durable batch whose events are published (persistent stores).
    let publishedRevision = Atomic<Int>(0)
    /// Whether events wait for `publish` before streams see them (a persistent store).
    private let gated: Bool
    /// `credentialEpoch`: moved under the lock by every token command applied and every replaced state.
    let epoch = Atomic<Int>(0)

    /// An in-memory store; `renderer` renders the answers idempotency keys keep.
    public convenience init(limits: StoreLimits = StoreLimits(), renderer: AnswerRenderer = .plain) {
        self.init(state: StoreState(limits: limits, renderer: renderer))
    }

    init(state: StoreState) {
        gated = state.journal.enabled
        outbox.performedRevision.store(state.revision, ordering: .releasing)
        self.state = Locked(state)
    }

    /// The revision through which every log shows streams all its events: a stream that reads
    /// this first, then finds nothing new in its log, has everything up to it (`synced` and
    /// `progress`, section 7.2). It may trail the global revision by the commands in flight.
    public var settledRevision: Int {
        let performed = outbox.performedRevision.load(ordering: .acquiring)
        return gated ? min(performed, publishedRevision.load(ordering: .acquiring)) : performed
    }

    // MARK: - Commands

    /// Applies `command`, performs its effects, and returns its answer (or its refusal).
    /// A client's write is refused with `unavailable` while the data directory cannot take
    /// writes, before it changes anything; background changes go on. `tap` sees the effects
    /// (under the lock, before they are performed: the determinism digest reads them there).
    public func execute(_ command: Command, tap: ((Effects) -> Void)? = nil) throws(CoreError) -> Outcome {
        try submit(command, tap: tap).outcome
    }

    /// `execute`, with the journal position the answer must wait for: the command's own when it
    /// was journaled, else the last one recorded when the answer reports state that may not be
    /// durable yet (a deduplicated registration, an idempotent replay); nil when there is
    /// nothing to wait for (an in-memory store, a keepalive, a barrier).
    public func submit(_ command: Command, tap: ((Effects) -> Void)? = nil) throws(CoreError) -> Executed {
        // Encoded for the journal before the lock, on the caller's thread: the lock is held
        // for less, and what the command holds is released where it was made (the committer
        // frees one buffer per command, not the command's strings and values).
        let encoded = gated && command.changesState ? command.encoded() : nil
        let (result, signal) = state.withLock { state -> (Result<Executed, CoreError>, Bool) in
            if command.action.isClientWrite, let outage = state.outage { return (.failure(outage.error), false) }
            let wasEmpty = state.journal.isEmpty
            let result = state.apply(command)
            if command.action.changesTokens { epoch.add(1, ordering: .releasing) }
            tap?(state.effects)
            // The state keeps the emptied effects the outbox gives back, for its next command.
            outbox.enqueue(taking: &state.effects)
            // A refused command changed nothing: nothing to make durable.
            guard case .success(let outcome) = result else { return (result.map { Executed($0, ticket: nil) }, false) }
            var signal = false
            // A replayed answer changed nothing: nothing to journal.
            if case .replayed = outcome {
            } else if encoded.map({ state.journal.record($0) }) != nil {
                signal = wasEmpty
            }
            let ticket = state.journal.enabled && outcome.reportsStoredState ? state.journal.lastRecorded : nil
            return (.success(Executed(outcome, ticket: ticket)), signal)
        }
        if let deliveries = outbox.performQueued(), !deliveries.isEmpty,
            deliveryDeferral.withLock({ $0 })?.take(deliveries) != true
        {
            deliveries.make()
        }
        if signal { journalHandler.withLock { $0 }?.wake() }
        return try result.get()
    }

    /// Lets `take` defer the deliveries of the commands submitted on its threads (the wakes
    /// of the streams they reached, barriers, the timer's call): it returns true when it will
    /// make them itself a little later (a worker sends the writer's answer first), false to
    /// have them made at once. Their events are in the logs already, either way.
    public func deferDeliveries(_ take: @escaping @Sendable (OutboxDeliveries) -> Bool) {
        deliveryDeferral.withLock { $0 = DeliveryDeferral(take: take) }
    }

    /// Runs `handler` (after the lock is released) whenever a command moved a lease deadline
    /// or queued a posting: the timer's signal to look at its deadlines again.
    public func onTimerChange(_ handler: @escaping @Sendable () -> Void) {
        outbox.timer.withLock { $0 = TimerHook(call: handler) }
    }

    /// Calls `handler` with the tokens that ended (revoked or expired) once their commands'
    /// events are in the logs (section 13: the streams opened with them end).
    public func onTokensEnded(_ handler: @escaping @Sendable ([(id: String, reason: String)]) -> Void) {
        outbox.revocation.withLock { $0 = RevocationHook(call: handler) }
    }

    /// Reads under the lock.
    func read<T>(_ body: (inout StoreState) throws(CoreError) -> T) throws(CoreError) -> T {
        try state.withLock { state throws(CoreError) in try body(&state) }
    }

    // MARK: - Outages

    /// Refuses clients' writes (`unavailable`, retry after `retryAfter` seconds) until
    /// `acceptWrites()`: the data directory cannot take them now.
    public func refuseWrites(because reason: String, retryAfter: Int) {
        state.withLock { $0.outage = Outage(reason: reason, retryAfter: max(1, retryAfter)) }
    }

    /// Accepts writes again (a commit succeeded).
    public func acceptWrites() {
        state.withLock { $0.outage = nil }
    }

    /// Whether clients' writes are accepted now.
    public var isWritable: Bool { state.withLock { $0.outage == nil } }

    // MARK: - Stats

    public func stats() -> StoreStats {
        state.withLock { state in
            StoreStats(
                objects: state.graph.objects.count, classes: state.graph.classes.count, revision: state.revision,
                observers: state.observers.count, observations: state.registrations.count,
                streams: state.observers.streams)
        }
    }

    /// What the bounded buffers hold (a pass over the observers: for `/metrics`, not a hot path).
    public func bufferFigures() -> BufferFigures {
        state.withLock { state in
            var events = 0
            var bytes = 0
            for id in state.observers.ids {
                guard let buffered = state.observers[id]?.log.buffered else { continue }
                events += buffered.events
                bytes += buffered.bytes
            }
            let admin = state.adminLog.buffered
            return BufferFigures(
                replayEvents: events, replayBytes: bytes, adminReplayEvents: admin.events,
                adminReplayBytes: admin.bytes, leaseDeadlines: state.observers.leases.count,
                queuedNotifications: state.center.queue.entries.count,
                queuedNotificationBytes: state.center.queue.bytes)
        }
    }
}

/// A closure in a struct, so that `Locked` holds it in its concrete representation (see
/// `journalHandler`).
struct DeliveryDeferral: Sendable {
    let take: @Sendable (OutboxDeliveries) -> Bool
}

/// A command's answer, and the journal position it waits for (see `Store.submit`).
public struct Executed: Sendable {
    public let outcome: Outcome
    public let ticket: Int?

    init(_ outcome: Outcome, ticket: Int?) {
        self.outcome = outcome
        self.ticket = ticket
    }
}

/// The answer a command was expected to give; anything else is a bug in the store.
func expected<T>(_ outcome: Outcome, _ extract: (Outcome) -> T?) -> T {
    guard let value = extract(outcome) else { preconditionFailure("unexpected outcome \(outcome)") }
    return value
}
