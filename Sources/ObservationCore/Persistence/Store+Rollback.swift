// MARK: - Rollback: back to what the data directory holds

extension Store {
    /// Undoes every change that is not durable: the state becomes `image`'s (the data
    /// directory's checkpoint and the commands after it, read back), as after a restart, but
    /// the streams stay attached. A durable server calls it when a commit failed for longer
    /// than its answers may wait, so that no later read, record or event shows those changes.
    ///
    /// - Every log keeps only its published events: those are exactly the events of durable
    ///   commands (publishing follows the commit), and no stream was ever shown another.
    /// - `failed` is the batch whose commit failed (taken, so no longer in the journal): its
    ///   logs, and the journal's, held unpublished events and may belong to no observer any
    ///   more (a removal that is undone); they are kept for the observers that come back.
    /// - The positions of the undone commands are never given again: an answer still waiting
    ///   on one can only be refused, never released by a later commit.
    /// - Live streams and their leases carry over; an observer whose removal is undone has
    ///   no stream, and its lease counts from `time`.
    ///
    /// Returns the revision the store is back at, and the last position undone: every answer
    /// whose ticket is past the data directory's last position, up to it, reports an undone change.
    @discardableResult
    public func rollBack(to image: PersistedImage, undoing failed: JournalBatch?, at time: Timestamp)
        throws(PersistenceError) -> (revision: Int, undoneThrough: Int)
    {
        let (deliveries, result) = try state.withLock {
            state throws(PersistenceError) -> (OutboxDeliveries?, (revision: Int, undoneThrough: Int)) in
            // Every undone command's events into their logs first (none can come while the
            // store's lock is held), so that they can be taken out again.
            let deliveries = outbox.performQueued()
            var kept: [String: EventLog] = [:]
            let undone = (failed?.logs ?? []) + state.journal.gatedLogs
            for (log, _) in undone where log !== state.adminLog { kept[log.label] = log }
            for id in state.observers.ids { kept[id] = state.observers[id]?.log }
            for log in kept.values { log.discardUnpublished() }
            state.adminLog.discardUnpublished()

            var restored = StoreState(
                limits: state.limits, persistent: true, renderer: state.renderer, adminLog: state.adminLog)
            restored.reusableLogs = kept
            try restored.restore(image)
            var replayed = try restored.replay(image.commands)
            restored.reusableLogs = [:]
            // The kept logs hold these events already (published: they are durable).
            let keptLogs = Set(kept.values.map(ObjectIdentifier.init) + [ObjectIdentifier(state.adminLog)])
            for index in replayed.indices {
                replayed[index].events.removeAll { keptLogs.contains(ObjectIdentifier($0.log)) }
            }
            restored.observers.adoptStreams(from: state.observers, at: time)
            restored.journal.skip(to: state.journal.sequence)
            restored.outage = state.outage
            var timer = Effects()
            timer.timerMustLook = true  // leases and queued postings are the durable ones now
            for id in restored.observers.ids {
                guard let record = restored.observers[id] else { continue }
                // A new log holds durable events only: shown as soon as the replay appends them.
                if kept[id] !== record.log { record.log.publish(through: record.lastEventID) }
            }
            // A kept log whose observer's creation was undone: its streams end.
            for (id, log) in kept.sorted(by: { $0.key < $1.key }) where restored.observers[id] == nil {
                timer.closedLogs.append(log)
            }
            state = restored
            epoch.add(1, ordering: .releasing)  // tokens may be back as they were: resolve them anew
            outbox.reset(revision: restored.revision)
            for effects in replayed + [timer] { outbox.enqueue(effects) }
            return (deliveries, (restored.revision, restored.journal.sequence))
        }
        deliveries?.make()
        outbox.perform()
        return result
    }
}
