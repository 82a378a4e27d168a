// MARK: - Persistence: what a durable server builds on

extension Store {
    /// A store that journals what it applies for a durable copy (`takeBatch`), rebuilt from
    /// `image`: its checkpoint, then its commands applied again (empty on first start). Its
    /// events reach streams only once published; the replayed ones are durable already.
    public convenience init(
        limits: StoreLimits = StoreLimits(), renderer: AnswerRenderer = .plain, restoring image: PersistedImage
    ) throws(PersistenceError) {
        var state = StoreState(limits: limits, persistent: true, renderer: renderer)
        try state.restore(image)
        let replayed = try state.replay(image.commands)
        self.init(state: state)
        for effects in replayed { outbox.enqueue(effects) }
        outbox.perform()
        self.state.withLock { state in
            for id in state.observers.ids {
                if let log = state.observers[id]?.log { log.publish(through: log.lastID) }
            }
            state.adminLog.publish(through: state.adminLog.lastID)
        }
        _ = publishedRevision.max(self.state.withLock { $0.revision }, ordering: .releasing)
    }

    /// Every entity as it is now, with the counters a replica needs to continue exactly: a
    /// cluster checkpoint at log position `position` (copied under the lock, built after it).
    public func fullCheckpoint(position: Int) -> JournalBatch.Checkpoint {
        let copy = state.withLock { $0 }
        return copy.fullCheckpoint(position: position)
    }

    /// Replaces this in-memory store's state with an exact checkpoint's (a cluster node at
    /// start, or rebuilding), or with an empty one (nil: no checkpoint yet). Its buffers start
    /// empty; ids continue.
    public func load(_ image: PersistedImage?) throws(PersistenceError) {
        let (limits, renderer) = state.withLock { ($0.limits, $0.renderer) }
        var restored = StoreState(limits: limits, renderer: renderer)
        if let image { try restored.restore(image) }
        state.withLock { $0 = restored }
        epoch.add(1, ordering: .releasing)
        outbox.reset(revision: restored.revision)
    }

    /// The last journal position given (tests and figures: answers carry their own, `submit`).
    public var journalSequence: Int { state.withLock { $0.journal.sequence } }

    /// Runs `handler` (after the lock is released) whenever a change finds the journal empty:
    /// the committer's signal that a batch is waiting.
    public func onJournal(_ handler: @escaping @Sendable () -> Void) {
        journalHandler.withLock { $0 = JournalHandler(wake: handler) }
    }

    /// Shows a durable batch's events to streams; its revision is settled from now on.
    public func publish(_ batch: JournalBatch) {
        batch.publish()
        _ = publishedRevision.max(batch.revision, ordering: .releasing)
    }

    /// Takes what was applied since the last batch (empty if nothing was); a checkpoint when
    /// `checkpoint` is set or `checkpointEvery` commands were applied since the last one.
    public func takeBatch(checkpoint: Bool = false, checkpointEvery: Int = .max) -> JournalBatch {
        state.withLock { state in
            state.takeBatch(checkpoint: checkpoint || state.journal.sinceCheckpoint >= checkpointEvery)
        }
    }
}

/// A closure in a struct, so that `Locked` holds it in its concrete representation (see
/// `Store.journalHandler`).
struct JournalHandler: Sendable {
    let wake: @Sendable () -> Void
}
