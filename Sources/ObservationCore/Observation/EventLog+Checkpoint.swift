// MARK: - A delivering observer's unacknowledged events in checkpoints (section 16)

extension EventLog {
    /// Every event held after `cursor`, visible yet or not (a checkpoint, under the store's lock,
    /// covers every command applied, durable or not). Events still in the outbox's queue are
    /// not here yet: after a restart from that checkpoint they read as a gap (a `reset`).
    func held(after cursor: Int) -> [Event] {
        state.withLock { state in
            guard state.events.count > 0 else { return [] }
            let first = max(cursor + 1, state.oldestID)
            guard first <= state.lastID else { return [] }
            return (first...state.lastID).map { state.events[$0 - state.oldestID].materialized }
        }
    }

    /// Puts a checkpoint's events back into a log that holds none (consecutive ids, oldest
    /// first): they were durable, so visible at once; the next event continues after them.
    func restore(_ events: [Event]) {
        state.withLock { state in
            guard state.events.count == 0, let first = events.first, first.id + events.count - 1 >= state.lastID
            else { return }
            for (offset, event) in events.enumerated() where event.id == first.id + offset {
                state.events.append(event)
                state.bufferedBytes += event.footprint
            }
            state.lastID = first.id + state.events.count - 1
            state.evict()
            state.visibleID = state.lastID
            state.revealedID = state.lastID
            state.highestSent = state.lastID
        }
    }
}
