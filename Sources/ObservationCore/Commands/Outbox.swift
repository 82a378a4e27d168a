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
    private let queue = Locked<[Effects]>([])
    /// Held while draining and performing, so batches go in in order. It counts the batches
    /// performed: a `Locked<Void>` has an empty state, whose accesses ThreadSanitizer sees
    /// outside the lock (the compiler may move them) and reports as races.
    private let performing = Locked(0)
    /// Told when a command moved a deadline or queued a posting (the server's timer).
    let timer = Locked<TimerHook?>(nil)
    /// The revision of the last command whose events are all in their logs (visible to
    /// streams in memory; a durable store's also wait for `publish`).
    let performedRevision = Atomic<Int>(0)

    func enqueue(_ effects: Effects) {
        guard !effects.isEmpty else { return }
        queue.withLock { $0.append(effects) }
    }

    /// Performs everything queued so far, in order.
    func perform() {
        let (wake, barriers, tellTimer) = performing.withLock {
            performed -> ([EventLog], [(log: EventLog, revision: Int)], Bool) in
            let batch = queue.withLock { queue -> [Effects] in
                defer { queue.removeAll(keepingCapacity: true) }
                return queue
            }
            performed &+= 1
            // Each log once, in the order first touched: appended, then revealed with the whole
            // batch (streams never see part of a revision), then woken if it tells its first
            // change since it was last woken.
            var touched: [EventLog] = []
            var order: [EventLog] = []
            var barriers: [(log: EventLog, revision: Int)] = []
            var tellTimer = false
            for effects in batch {
                for (log, event) in effects.events where log.append(event, batch: performed) {
                    touched.append(log)
                }
                for log in effects.closedLogs where log.close() { order.append(log) }
                barriers += effects.barriers
                tellTimer = tellTimer || effects.timerMustLook
            }
            for log in touched where log.reveal() { order.append(log) }
            if let last = batch.last { _ = performedRevision.max(last.revision, ordering: .releasing) }
            return (order, barriers, tellTimer)
        }
        for (log, revision) in barriers {
            log.barrier(revision: revision)
            log.wake()
        }
        for log in wake { log.wake() }
        if tellTimer { timer.withLock { $0 }?.call() }
    }
}

/// A closure in a struct, so that `Locked` holds it in its concrete representation (see
/// `Store.journalHandler`).
struct TimerHook: Sendable {
    let call: @Sendable () -> Void
}
