import ObservationCore

/// The transitions of the append queue, the waiters and the read barriers. Each runs under
/// `ClusterShared.state` and returns what the caller does after releasing it.
///
/// A command is queued, then taken by the appender, then sent (`send`), then in the log. Its
/// waiter leaves at the first of: its outcome applied (the tailer), a refusal before it was
/// sent or by the database (503), the node stopping, or its deadline (`expire`).
extension ClusterState {
    /// Queues `command` with the next origin, or says why the node refuses it now.
    mutating func enqueue(_ command: String, resolve: @escaping ClusterNode.Resolve) -> Result<Int, CoreError> {
        guard !stopping else { return .failure(ClusterNode.unavailable("the node is stopping")) }
        guard tag != nil, broken == nil else {
            return .failure(ClusterNode.unavailable("the node has lost the cluster's database and is joining again"))
        }
        let origin = nextOrigin
        nextOrigin += 1
        waiters[origin] = Waiter(resolve: resolve)
        queue.append(Queued(origin: origin, command: command))
        return .success(origin)
    }

    /// `origin`'s deadline passed: its waiter, removed (to be answered: 504 if `sent`, else
    /// 503), or nil when it was answered already. One not sent leaves the queue (if still
    /// there) and will not be sent (`send` skips it): it never reaches the log.
    mutating func expire(_ origin: Int) -> Waiter? {
        guard let waiter = waiters.removeValue(forKey: origin) else { return nil }
        if !waiter.sent, let index = queue.firstIndex(where: { $0.origin == origin }) { queue.remove(at: index) }
        return waiter
    }

    /// The appender's next batch: at most `limit` commands, oldest first, off the queue.
    mutating func takeBatch(limit: Int) -> [Queued] {
        let count = min(queue.count, limit)
        defer { queue.removeFirst(count) }
        return Array(queue.prefix(count))
    }

    /// The appender sends `batch` now: those of it still waiting, marked sent (the others met
    /// their deadline before and were answered 503: they must not reach the log).
    mutating func send(_ batch: [Queued]) -> [Queued] {
        batch.filter { command in
            guard waiters[command.origin] != nil else { return false }
            waiters[command.origin]?.sent = true
            return true
        }
    }

    /// Commands sent that are not in the log (and can no longer get there): those still
    /// waiting go back to the front of the queue, in their order, not sent; the others were
    /// answered 504 and are dropped (never applied: a repeat with the same key applies once).
    /// Returns how many went back.
    mutating func requeue(_ commands: [Queued]) -> Int {
        let again = commands.filter { waiters[$0.origin] != nil }
        for command in again { waiters[command.origin]?.sent = false }
        queue.insert(contentsOf: again, at: 0)
        return again.count
    }

    /// The waiters of `origins`, removed (to be answered by the caller).
    mutating func removeWaiters(_ origins: [Int]) -> [Waiter] {
        origins.compactMap { waiters.removeValue(forKey: $0) }
    }

    /// The node stops: nothing more is queued; every waiter is returned, to be told so.
    mutating func stop() -> [Waiter] {
        stopping = true
        defer { waiters = [:] }
        return Array(waiters.values)
    }

    /// Queues a read for the tailer's next complete read: nil when the node cannot read the
    /// log now (the caller runs it at once, from the local replica: a stale read beats none),
    /// else whether the caller schedules a sweep (none is scheduled).
    mutating func addBarrier(_ body: @escaping @Sendable (Bool) -> Void, at now: ContinuousClock.Instant) -> Bool? {
        guard tailerConnected, broken == nil, !stopping else { return nil }
        barriers.append(Barrier(number: nextBarrier, run: body, since: now))
        nextBarrier += 1
        defer { barrierSweep = true }
        return !barrierSweep
    }

    /// The barriers that arrived by `cutoff`, removed (their deadline passed), and the arrival
    /// of the oldest left (the caller sweeps again at its deadline; with none left, the next
    /// barrier schedules a sweep).
    mutating func expireBarriers(arrivedBy cutoff: ContinuousClock.Instant) -> (
        expired: [Barrier], oldest: ContinuousClock.Instant?
    ) {
        let count = barriers.prefix { $0.since <= cutoff }.count
        let expired = Array(barriers.prefix(count))
        barriers.removeFirst(count)
        barrierSweep = !barriers.isEmpty
        return (expired, barriers.first?.since)
    }

    /// The read barriers waiting now, removed (the caller runs them: the tailer lost the log).
    mutating func takeBarriers() -> [Barrier] {
        defer { barriers = [] }
        return barriers
    }

    /// The read barriers that arrived before the one numbered `mark` (those waiting when a
    /// complete read began: the caller runs them, it has ended), removed.
    mutating func takeBarriers(before mark: Int) -> [Barrier] {
        let count = barriers.prefix { $0.number < mark }.count
        defer { barriers.removeFirst(count) }
        return Array(barriers.prefix(count))
    }
}
