import Synchronization

/// Performs commands' effects after the store's lock is released, in the order the commands
/// were applied: events go into their logs (ids in order, as the state gave them), the logs
/// are closed or woken, and the timer is told.
///
/// Effects are queued under the store's lock (so the queue is in apply order), then whoever
/// comes next drains the whole queue under the outbox's own lock: a thread may perform
/// another's effects, never out of order, and a command's caller returns only after its
/// effects are in (a `now` posting is in every stream's buffer before its answer).
///
/// Thread-safety: `enqueue` under the store's lock; `perform` from any thread after it.
final class Outbox: Sendable {
    /// Effects to perform, and the revision of the last command enqueued (with effects or not).
    private let queue = Locked<(effects: [Effects], revision: Int)>(([], 0))
    /// Held while draining and performing, so batches go in in order. It counts the batches
    /// performed: a `Locked<Void>` has an empty state, whose accesses ThreadSanitizer sees
    /// outside the lock (the compiler may move them) and reports as races.
    private let performing = Locked(0)
    /// Told when a command moved a deadline or queued a posting (the server's timer).
    let timer = Locked<TimerHook?>(nil)
    /// The revision of the last command whose events are all in their logs (visible to
    /// streams in memory; a durable store's also wait for `publish`).
    let performedRevision = Atomic<Int>(0)

    /// Starts over at `revision` (a store whose state was replaced), with nothing queued.
    func reset(revision: Int) {
        performing.withLock { _ in
            queue.withLock { $0 = ([], revision) }
            performedRevision.store(revision, ordering: .releasing)
        }
    }

    /// Queues a command's effects (under the store's lock, so in apply order). A command
    /// without effects still counts: its revision is settled once what came before is performed.
    func enqueue(_ effects: Effects) {
        queue.withLock { queue in
            queue.revision = max(queue.revision, effects.revision)
            if !effects.isEmpty { queue.effects.append(effects) }
        }
    }

    /// Performs everything queued so far, in order.
    func perform() {
        let (wake, barriers, tellTimer) = performing.withLock {
            performed -> ([EventLog], [EventLog.Barrier], Bool) in
            let (batch, revision) = queue.withLock { queue in
                defer { queue.effects.removeAll(keepingCapacity: true) }
                return queue
            }
            performed &+= 1
            // Each log once, in the order first touched: appended, then revealed with the whole
            // batch (streams never see part of a revision), then woken if it tells its first
            // change since it was last woken.
            var touched: [EventLog] = []
            var order: [EventLog] = []
            var barriers: [EventLog.Barrier] = []
            var tellTimer = false
            for effects in batch {
                for (log, event) in effects.events where log.append(event, batch: performed) {
                    touched.append(log)
                }
                for log in effects.closedLogs where log.close() { order.append(log) }
                // Right after the events of the commands before it: between two revisions.
                barriers += effects.barriers.map { $0.log.barrier(revision: $0.revision) }
                tellTimer = tellTimer || effects.timerMustLook
            }
            for log in touched where log.reveal() { order.append(log) }
            _ = performedRevision.max(revision, ordering: .releasing)
            return (order, barriers, tellTimer)
        }
        for barrier in barriers { barrier.deliver() }
        for log in wake { log.wake() }
        if tellTimer { timer.withLock { $0 }?.call() }
    }
}

/// A closure in a struct, so that `Locked` holds it in its concrete representation (see
/// `Store.journalHandler`).
struct TimerHook: Sendable {
    let call: @Sendable () -> Void
}
