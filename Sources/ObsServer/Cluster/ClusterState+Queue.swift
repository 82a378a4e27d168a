import ObservationCore

/// The transitions of the append queue, the waiters and the read barriers. Each runs under
/// `ClusterShared.state` and returns what the caller does after releasing it.
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

    /// Takes `origin` out of the queue if it is still there (its deadline passed): the waiter to
    /// answer 503, or nil when the appender has taken it (the database decides it).
    mutating func dropIfQueued(_ origin: Int) -> Waiter? {
        guard let index = queue.firstIndex(where: { $0.origin == origin }) else { return nil }
        queue.remove(at: index)
        return waiters.removeValue(forKey: origin)
    }

    /// The appender's next batch: at most `limit` commands, oldest first, off the queue.
    mutating func takeBatch(limit: Int) -> [Queued] {
        let count = min(queue.count, limit)
        defer { queue.removeFirst(count) }
        return Array(queue.prefix(count))
    }

    /// Commands that never reached the log go back to the front of the queue, in their order.
    mutating func requeue(_ commands: [Queued]) {
        queue.insert(contentsOf: commands, at: 0)
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

    /// Queues a read for the tailer's next complete read; false when the node cannot read the
    /// log now (the caller runs it at once, from the local replica: a stale read beats none).
    mutating func addBarrier(_ body: @escaping @Sendable () -> Void) -> Bool {
        guard tailerConnected, broken == nil, !stopping else { return false }
        barriers.append(Barrier(run: body))
        return true
    }

    /// The read barriers waiting now, removed (the caller runs them after a complete read).
    mutating func takeBarriers() -> [Barrier] {
        defer { barriers = [] }
        return barriers
    }
}
