// MARK: - Persistence: what a durable server builds on

extension Store {
    /// A store that records what changes for a durable copy (`takeJournalBatch`), rebuilt
    /// from `image` (empty on first start). Its events reach streams only once published.
    public convenience init(limits: StoreLimits = StoreLimits(), restoring image: PersistedImage)
        throws(PersistenceError)
    {
        var state = StoreState(limits: limits, persistent: true)
        try state.restore(image, at: .now())
        self.init(state: state)
    }

    /// The journal sequence of the last change: a caller that saw a change made by now
    /// may wait for a batch with at least this sequence to be durable.
    public var journalSequence: Int { sequenceCounter.load(ordering: .acquiring) }

    /// Runs `handler` (after the lock is released) whenever a change finds the journal empty:
    /// the committer's signal that a batch is waiting.
    public func onJournal(_ handler: @escaping @Sendable () -> Void) {
        journalHandler.withLock { $0 = JournalHandler(wake: handler) }
    }

    /// Takes what changed since the last batch (empty if nothing did).
    public func takeJournalBatch() -> JournalBatch {
        state.withLock { $0.takeJournalBatch() }
    }
}

/// A closure in a struct, so that `Locked` holds it in its concrete representation (see
/// `Store.journalHandler`).
struct JournalHandler: Sendable {
    let wake: @Sendable () -> Void
}
