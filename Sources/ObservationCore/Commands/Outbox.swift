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
    /// Effects to perform, the revision of the last command enqueued (with effects or not), and
    /// performed effects emptied with their lists' storage, for the next commands to fill.
    private let queue = Locked<(effects: [Effects], revision: Int, spares: [Effects])>(([], 0, []))
    /// The most emptied effects kept, and the largest list one may keep (a fan-out's thousand
    /// events, or a sweep's thousand closed logs, are freed): bounded whatever the commands were.
    private static let sparesKept = 4
    private static let spareCapacity = 16
    /// Held while draining and performing, so batches go in in order. Its state is what a
    /// batch works with, kept (emptied, with its capacity) so that performing allocates nothing.
    private let performing = Locked(Scratch())
    /// Told when a command moved a deadline or queued a posting (the server's timer).
    let timer = Locked<TimerHook?>(nil)
    /// Told of tokens that ended (the server's streams opened with them end).
    let revocation = Locked<RevocationHook?>(nil)
    /// The revision of the last command whose events are all in their logs (visible to
    /// streams in memory; a durable store's also wait for `publish`).
    let performedRevision = Atomic<Int>(0)

    /// Starts over at `revision` (a store whose state was replaced), with nothing queued.
    func reset(revision: Int) {
        performing.withLock { scratch in
            queue.withLock { $0 = ([], revision, []) }
            scratch.batch = []
            performedRevision.store(revision, ordering: .releasing)
        }
    }

    /// Queues a command's effects (under the store's lock, so in apply order). A command
    /// without effects still counts: its revision is settled once what came before is performed.
    func enqueue(_ effects: consuming Effects) {
        var effects = effects
        enqueue(taking: &effects)
    }

    /// `enqueue`, leaving `effects` empty for the next command: effects performed before, with
    /// their lists' storage, when there are some (a write then allocates no list for its events).
    func enqueue(taking effects: inout Effects) {
        queue.withLock { queue in
            queue.revision = max(queue.revision, effects.revision)
            guard !effects.isEmpty else {
                effects.revision = 0
                return
            }
            // Moved in, not copied: a copy retains each of its lists, and the original releases them.
            queue.effects.append(queue.spares.popLast() ?? Effects())
            swap(&queue.effects[queue.effects.count - 1], &effects)
        }
    }

    /// Performs everything queued so far, in order.
    func perform() {
        performQueued()?.make()
    }

    /// Puts everything queued so far into the logs, in order; the deliveries are the caller's
    /// to make once it holds no lock (`deliver`). Nil when there are none (most writes nobody
    /// streams: nothing is built for them, or destroyed).
    func performQueued() -> OutboxDeliveries? {
        let (wake, barriers, tellTimer, ended) = performing.withLock {
            scratch -> (LogsToWake, [EventLog.Barrier], Bool, [(id: String, reason: String)]) in
            // The queue takes the empty list back: neither list is copied or reallocated.
            let revision = queue.withLock { queue in
                swap(&queue.effects, &scratch.batch)
                return queue.revision
            }
            scratch.performed &+= 1
            let performed = scratch.performed
            // Each log once, in the order first touched: appended, then revealed with the whole
            // batch (streams never see part of a revision), then woken if it tells its first
            // change since it was last woken.
            var order = LogsToWake()
            var barriers: [EventLog.Barrier] = []
            var tellTimer = false
            var ended: [(id: String, reason: String)] = []
            // By position: iterating the batch would copy each command's effects, retaining every list.
            for command in scratch.batch.indices {
                if !scratch.batch[command].endedTokens.isEmpty { ended += scratch.batch[command].endedTokens }
                for event in scratch.batch[command].events.indices {
                    let log = scratch.batch[command].events[event].log
                    if log.append(scratch.batch[command].events[event].event, batch: performed) {
                        scratch.touched.append(log)
                    }
                }
                for log in scratch.batch[command].closedLogs where log.close() { order.append(log) }
                // Right after the events of the commands before it: between two revisions.
                for (log, revision) in scratch.batch[command].barriers {
                    barriers.append(log.barrier(revision: revision))
                }
                tellTimer = tellTimer || scratch.batch[command].timerMustLook
            }
            for log in scratch.touched where log.reveal() { order.append(log) }
            scratch.touched.emptyKeepingCapacity()
            // Back to the queue for the next commands, emptied, as many as it keeps; the rest
            // freed whole (a fan-out's list is not emptied event by event to be freed after).
            queue.withLock { queue in
                while queue.spares.count < Self.sparesKept, var spare = scratch.batch.popLast() {
                    guard spare.fits(within: Self.spareCapacity) else { continue }
                    spare.empty()
                    queue.spares.append(Effects())
                    swap(&queue.spares[queue.spares.count - 1], &spare)
                }
            }
            scratch.batch.emptyKeepingCapacity()
            _ = performedRevision.max(revision, ordering: .releasing)
            return (order, barriers, tellTimer, ended)
        }
        guard !wake.isEmpty || !barriers.isEmpty || tellTimer || !ended.isEmpty else { return nil }
        return OutboxDeliveries(
            wake: wake, barriers: barriers, timer: tellTimer ? timer.withLock { $0 } : nil,
            ended: ended.isEmpty ? nil : revocation.withLock { $0 }.map { ($0, ended) })
    }

}

/// What performing a batch of effects left to do once no lock is held: barriers to hand over,
/// logs to wake (their parked streams write to their sockets), the timer to tell. Made at
/// once, or a little later by whoever defers them (a worker sends a writer's answer first).
public struct OutboxDeliveries: Sendable {
    fileprivate let wake: LogsToWake
    fileprivate let barriers: [EventLog.Barrier]
    fileprivate let timer: TimerHook?
    fileprivate let ended: (RevocationHook, [(id: String, reason: String)])?

    /// Whether there is anything to do.
    public var isEmpty: Bool { wake.isEmpty && barriers.isEmpty && timer == nil && ended == nil }

    /// Does it (once; no lock held). Ended tokens last: their streams have their events first.
    public func make() {
        for barrier in barriers { barrier.deliver() }
        wake.first?.wake()
        for log in wake.rest { log.wake() }
        timer?.call()
        if let (hook, ended) = ended { hook.call(ended) }
    }
}

/// The logs a batch woke, in the order first touched. The first is kept apart: most writes wake
/// one log (the observer's), and a list of one was an allocation per write.
struct LogsToWake: Sendable {
    private(set) var first: EventLog?
    private(set) var rest: [EventLog] = []

    var isEmpty: Bool { first == nil }

    mutating func append(_ log: EventLog) {
        if first == nil { first = log } else { rest.append(log) }
    }
}

/// What the outbox keeps between batches: how many it performed (a log tells the first event
/// of each batch), and the lists a batch fills, empty with their capacity.
private struct Scratch {
    var performed = 0
    var batch: [Effects] = []
    var touched: [EventLog] = []
}

/// A closure in a struct, so that `Locked` holds it in its concrete representation (see
/// `Store.journalHandler`).
struct TimerHook: Sendable {
    let call: @Sendable () -> Void
}

/// Told of the tokens (ids, with why) that ended in a batch.
struct RevocationHook: Sendable {
    let call: @Sendable ([(id: String, reason: String)]) -> Void
}

extension Array {
    /// Empties the array and keeps its storage, element by element from the end: for the few
    /// elements a batch holds, a fraction of `removeAll(keepingCapacity: true)`, which goes
    /// through the generic `replaceSubrange` (BENCHMARKS.md, "Figures behind the code").
    mutating func emptyKeepingCapacity() {
        while popLast() != nil {}
    }
}
