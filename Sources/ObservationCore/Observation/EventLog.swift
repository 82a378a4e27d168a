/// The bounded replay buffer of one observer (or of the admin stream), and the
/// streams reading it.
///
/// Events get gapless ids 1, 2, 3, … in the order they are appended. The log keeps
/// the newest of them within two budgets, a count (`capacity`) and bytes (`maxBytes`,
/// counted as `Event.footprint`: what the event really occupies); the oldest leave
/// first. The newest event always stays, even when it alone is over the byte budget.
///
/// A stream whose next event leaves the buffer has fallen too far behind: the log
/// detaches it at once, counts it in `droppedStreams` and, at the next `wake()`, runs
/// its `abort`, which closes its connection (the client resumes with Last-Event-ID
/// and gets `reset`). So the memory a log holds never depends on how fast anyone reads.
///
/// Thread-safety: its own lock. Appends come from the outbox, in apply order, under its
/// `performing` lock (outbox, then log); reads from stream threads take only this lock.
/// Wakers and aborts run after the lock is released.
public final class EventLog: Sendable {
    /// What the log may do to an attached stream, from any thread, after its lock is released.
    /// An object: handed out of the lock on every wake, it is one reference, not three closures.
    public final class Reader: Sendable {
        /// There is something new to read.
        public let wake: @Sendable () -> Void
        /// The stream fell behind the buffer: end its connection now.
        public let abort: @Sendable () -> Void
        /// A delivery barrier: send `progress` at `revision` once every event up to `afterID`
        /// is sent (the caller wakes the log afterwards).
        public let barrier: @Sendable (_ afterID: Int, _ revision: Int) -> Void

        public init(
            wake: @escaping @Sendable () -> Void, abort: @escaping @Sendable () -> Void,
            barrier: @escaping @Sendable (_ afterID: Int, _ revision: Int) -> Void = { _, _ in }
        ) {
            self.wake = wake
            self.abort = abort
            self.barrier = barrier
        }
    }

    struct Attached: Sendable {
        let token: Int
        /// The last id the stream has been handed.
        var cursor: Int
        let reader: Reader
    }

    struct State: Sendable {
        var events = EventRing()
        var bufferedBytes = 0
        var lastID = 0
        /// The last id streams may send: ids past it wait for their change to be durable.
        var visibleID = 0
        /// The last id of the last whole batch appended (`reveal`): streams never see past it,
        /// so never part of a revision, even when `publish` has gone further.
        var revealedID = 0
        /// Whether appends wait for `publish` to become visible (a persistent store).
        var gated = false
        let capacity: Int
        let maxBytes: Int
        /// Attached streams, in attach order (a few per log: a list beats hashing).
        var attached: [Attached] = []
        var nextStreamToken = 1
        /// The highest id any stream has been handed, for `backlog` while none is connected.
        var highestSent = 0
        var droppedStreams = 0
        /// Streams cut off since the last `wake()`: their aborts run then.
        var cutOff: [Reader] = []
        var closed = false
        /// Changed since the last `wake()`, and someone will wake it (see `reveal`).
        var wakePending = false
        /// The outbox batch that last appended here (see `append`).
        var batch = -1
        /// One-shot wake-ups of readers that are not streams (a poll waiting for its first
        /// event): run, and dropped, at the next `wake()`.
        var waiters: [(token: Int, wake: @Sendable () -> Void)] = []
        var nextWaiterToken = 1

        /// The id of the oldest event held (lastID + 1 when empty).
        var oldestID: Int { lastID - events.count + 1 }

        /// The last id streams may send now: revealed, and published (a gated log).
        var showableID: Int { min(visibleID, revealedID) }

        /// Whether a `wake()` would reach anyone: attached streams, streams cut off since the
        /// last one (their aborts), or waiters.
        var hasListeners: Bool { !attached.isEmpty || !cutOff.isEmpty || !waiters.isEmpty }

        mutating func evict() {
            var evicted = false
            while events.count > capacity || (bufferedBytes > maxBytes && events.count > 1) {
                bufferedBytes -= events.removeFirst().footprint
                evicted = true
            }
            guard evicted else { return }
            let oldest = oldestID
            attached.removeAll { stream in
                guard stream.cursor + 1 < oldest else { return false }
                droppedStreams += 1
                cutOff.append(stream.reader)
                return true
            }
        }
    }

    /// Internal for `EventLog+Checkpoint` only: everything else goes through the methods here.
    let state: Locked<State>
    /// Whose log this is: an observer's id, or `admin`.
    public let label: String

    /// A log whose ids start after `lastID`, holding at most `capacity` events and `maxBytes`
    /// bytes. A `gated` log shows an event to streams only once `publish` reaches it (when the
    /// change that made it is durable).
    public init(label: String, capacity: Int, maxBytes: Int = .max, lastID: Int = 0, gated: Bool = false) {
        self.label = label
        var state = State(capacity: max(1, capacity), maxBytes: max(1, maxBytes))
        state.lastID = lastID
        state.visibleID = lastID
        state.revealedID = lastID
        state.highestSent = lastID
        state.gated = gated
        self.state = Locked(state)
    }

    // MARK: - Writing

    /// Appends an event whose id the state gave it (the next one: events arrive in order),
    /// as part of the outbox's batch `batch`. Streams see it only after `reveal()`, so that
    /// they never see part of a revision's events. Returns whether it is the first event of
    /// this batch here (the caller reveals each log once per batch, no hashing).
    func append(_ event: Event, batch: Int) -> Bool {
        state.withLock { state in
            assert(event.id == state.lastID + 1, "event \(event.id) after \(state.lastID)")
            state.lastID = event.id
            state.events.append(event)
            state.bufferedBytes += event.footprint
            state.evict()
            defer { state.batch = batch }
            return state.batch != batch
        }
    }

    /// Shows the events appended in the current batch to streams (a gated log: once they are
    /// published too, and its publisher wakes it). Returns whether the caller must wake the
    /// log: something new is visible, it is the log's first change since its last `wake()`,
    /// and someone waits to hear it (a stream or waiter that comes later reads what is
    /// visible when it starts, under this lock, so nothing is missed by not waking nobody).
    func reveal() -> Bool {
        state.withLock { state in
            state.revealedID = state.lastID
            if !state.gated { state.visibleID = state.lastID }
            guard state.lastID <= state.visibleID, state.hasListeners else { return false }
            defer { state.wakePending = true }
            return !state.wakePending
        }
    }

    /// A delivery barrier at `revision` after every event the log holds now, for the streams
    /// attached now: take it where the log's events are in apply order (the outbox, while it
    /// performs), `deliver` it after every lock is released.
    func barrier(revision: Int) -> Barrier {
        state.withLock { state in
            state.wakePending = true
            return Barrier(log: self, readers: state.attached.map(\.reader), afterID: state.lastID, revision: revision)
        }
    }

    /// A delivery barrier taken (`barrier(revision:)`), not yet handed to its streams.
    struct Barrier: Sendable {
        let log: EventLog
        let readers: [Reader]
        let afterID: Int
        let revision: Int

        /// Hands it to each stream, then wakes the log.
        func deliver() {
            for reader in readers { reader.barrier(afterID, revision) }
            log.wake()
        }
    }

    /// Lets streams send every event up to `id` (its change is durable), including events
    /// not appended or revealed yet (they show as soon as they are). Wake the log afterwards.
    public func publish(through id: Int) {
        state.withLock { $0.visibleID = max($0.visibleID, id) }
    }

    /// Continues the ids of an earlier run: the next event gets `id + 1` (an empty log only;
    /// ids never go back).
    func continueAfter(_ id: Int) {
        state.withLock { state in
            guard state.events.count == 0, id > state.lastID else { return }
            state.lastID = id
            state.visibleID = id
            state.revealedID = id
            state.highestSent = id
        }
    }

    /// Forgets the events no stream may see yet (their changes were rolled back, never made
    /// durable): the next event takes the id after the last published one, and a close the
    /// rollback undid is undone too. Call with every queued append performed and none to come
    /// (under the store's lock, after the outbox performed what was queued).
    func discardUnpublished() {
        state.withLock { state in
            state.closed = false
            let kept = min(state.visibleID, state.lastID)
            while state.lastID > kept, let event = state.events.removeLast() {
                state.bufferedBytes -= event.footprint
                state.lastID -= 1
            }
            // Published ahead of the appends (never past what was made durable): not past them now.
            state.lastID = kept
            state.visibleID = kept
            state.revealedID = kept
        }
    }

    /// Marks the log closed: streams end once they have sent what it holds. Returns whether
    /// the caller must wake the log (see `append`).
    func close() -> Bool {
        state.withLock { state in
            state.closed = true
            defer { state.wakePending = true }
            return !state.wakePending
        }
    }

    /// Closed, with every event visible (a closed log's last events may still wait for durability).
    public var isClosed: Bool { state.withLock { $0.closed && $0.showableID >= $0.lastID } }

    public var capacity: Int { state.withLock { $0.capacity } }

    /// Runs every attached stream's waker, and the aborts of streams cut off since the last
    /// call (call after releasing the store's lock).
    public func wake() {
        // Readers, not their closures: a closure handed out of the lock's generic body is
        // wrapped in a thunk allocated on every wake (one per delivery).
        // One stream and nothing else (an observer's log, nearly always): no lists made or emptied.
        let only = state.withLock { state -> Reader? in
            guard state.attached.count == 1, state.cutOff.isEmpty, state.waiters.isEmpty else { return nil }
            state.wakePending = false
            return state.attached[0].reader
        }
        if let only { return only.wake() }
        // Anything else, looked at again under the lock (it may have changed since).
        typealias Waiters = [(token: Int, wake: @Sendable () -> Void)]
        let (readers, cutOff, waiters) = state.withLock { state -> ([Reader], [Reader], Waiters) in
            defer {
                state.cutOff.removeAll()
                state.waiters.removeAll()
                state.wakePending = false
            }
            return (state.attached.map(\.reader), state.cutOff, state.waiters)
        }
        for stream in cutOff { stream.abort() }
        for reader in readers { reader.wake() }
        for waiter in waiters { waiter.wake() }
    }

    /// Runs `wake` once, after the log's lock is released, at the next `wake()` (the log has
    /// something new to show, or it closed); then it is dropped: a waiter that finds nothing new
    /// waits again. Returns nil, and never runs `wake`, when an event after `cursor` is visible
    /// already or the log is closed with every event visible: checked under the lock that `wake()` takes, so no wake-up is
    /// lost. Otherwise the token to `cancelWait` with. For readers that are not streams: a
    /// waiter has no cursor in the log, so it is never cut off, counted or handed barriers.
    public func waitForEvents(after cursor: Int, _ wake: @escaping @Sendable () -> Void) -> Int? {
        state.withLock { state in
            let visible = min(state.showableID, state.lastID)
            if visible > cursor || (state.closed && visible == state.lastID) { return nil }
            let token = state.nextWaiterToken
            state.nextWaiterToken += 1
            state.waiters.append((token, wake))
            return token
        }
    }

    /// Drops a waiter that has not run yet (it gave up: its wait ran out).
    public func cancelWait(_ token: Int) {
        state.withLock { state in state.waiters.removeAll { $0.token == token } }
    }

    // MARK: - Reading

    /// Where a stream that asks to resume after `lastEventID` (nil: from the oldest event held)
    /// starts: after it while the next event is still held, else a reset (`unknown` for an id
    /// the log never made).
    public func resumePoint(after lastEventID: Int?) -> ResumePoint {
        state.withLock { state in
            guard let lastEventID else { return .after(state.oldestID - 1) }
            if lastEventID < 0 || lastEventID > state.lastID {
                return .unknown(oldestAvailable: state.oldestID, cursor: state.lastID)
            }
            if lastEventID + 1 >= state.oldestID { return .after(lastEventID) }
            return .reset(oldestAvailable: state.oldestID, cursor: state.lastID)
        }
    }

    /// Events after `cursor` (the last id the reader has) up to `last`: at most `limit`, and no more than
    /// `maxBytes` of them once there is one. `advancing` (an attached stream's token) records,
    /// under the same lock, that the stream now has them: an append right after cannot cut
    /// the stream off for events it already holds.
    public func read(
        after cursor: Int, through last: Int = .max, limit: Int = 256, maxBytes: Int = .max,
        advancing token: Int? = nil
    ) -> ReadResult {
        var events: [Event] = []
        let handed = read(after: cursor, through: last, limit: limit, maxBytes: maxBytes, advancing: token) {
            events.append($0)
        }
        switch handed {
        case .events(_): return .events(events)
        case .upToDate: return .upToDate
        case .gap(let oldest): return .gap(oldest: oldest)
        }
    }

    /// What `read(…, into:)` did: handed events over, or found none to hand.
    public enum Handed: Sendable {
        /// `caughtUp`: it handed every event visible, and the log is open (a read now would
        /// find nothing new; the next append wakes the log's streams).
        case events(caughtUp: Bool)
        case upToDate
        case gap(oldest: Int)
    }

    /// `read`, handing each event to `take` instead of collecting them into an array (a
    /// stream's read, at every delivery). `take` runs under the log's lock, which every write
    /// to the log waits for: it keeps the event and does nothing slow (an admin stream encodes its
    /// deferred records after it).
    public func read(
        after cursor: Int, through last: Int = .max, limit: Int = 256, maxBytes: Int = .max,
        advancing token: Int? = nil, into take: (Event) -> Void
    ) -> Handed {
        state.withLock { state in
            let visible = min(state.showableID, state.lastID, last)
            guard cursor < visible else { return .upToDate }
            guard state.events.count > 0, cursor + 1 >= state.oldestID else {
                return .gap(oldest: max(1, state.oldestID))
            }
            var (handed, bytes) = (cursor, 0)
            for id in cursor + 1...min(visible, cursor + limit) {
                let event = state.events[id - state.oldestID]
                if handed > cursor, bytes + event.footprint > maxBytes { break }
                bytes += event.footprint
                take(event)
                handed = id
            }
            state.highestSent = max(state.highestSent, handed)
            if let token, let index = state.attached.firstIndex(where: { $0.token == token }) {
                state.attached[index].cursor = handed
            }
            return .events(caughtUp: handed == min(state.showableID, state.lastID) && !state.closed)
        }
    }

    /// Attaches a stream that has everything up to `cursor`. Returns its token.
    public func attach(cursor: Int, reader: Reader) -> Int {
        state.withLock { state in
            let token = state.nextStreamToken
            state.nextStreamToken += 1
            state.attached.append(Attached(token: token, cursor: cursor, reader: reader))
            return token
        }
    }

    /// Detaches a stream; `dropped` counts it as cut off for being slow. Returns false when
    /// it was no longer attached (the log cut it off, and counted it, when its next event left).
    @discardableResult
    public func detach(_ token: Int, dropped: Bool = false) -> Bool {
        state.withLock { state in
            guard let index = state.attached.firstIndex(where: { $0.token == token }) else { return false }
            state.attached.remove(at: index)
            if dropped { state.droppedStreams += 1 }
            return true
        }
    }

    // MARK: - Figures

    public var lastID: Int { state.withLock { $0.lastID } }

    /// The last id streams may send now.
    public var visibleID: Int { state.withLock { min($0.showableID, $0.lastID) } }

    /// The oldest id still held (lastID + 1 when empty).
    public var oldestID: Int { state.withLock { $0.oldestID } }

    /// The events buffered, and the bytes they occupy (`Event.footprint`).
    public var buffered: (events: Int, bytes: Int) { state.withLock { ($0.events.count, $0.bufferedBytes) } }

    /// Events buffered but not yet sent to the slowest stream (to any stream, while none is attached).
    public var backlog: Int {
        state.withLock { state in
            let slowest = state.attached.map(\.cursor).min() ?? state.highestSent
            return min(state.events.count, max(0, state.lastID - slowest))
        }
    }

    public var droppedStreams: Int { state.withLock { $0.droppedStreams } }
}
