import Dispatch
import ObservationCore

/// Submitting commands to the appender's queue, each with its deadline (`--commit-timeout`).
extension ClusterShared {
    /// Queues `command` for the appender; `resolve` gets its outcome once this node has applied
    /// it (on the tailer's thread), or an error: 503 when the node cannot append now, or the
    /// database refused it, or it was not sent by its deadline; 504 when it was sent and its
    /// outcome is not known by its deadline (`expire`).
    func submit(_ command: Command, resolve: @escaping ClusterNode.Resolve) {
        let encoded = String(decoding: command.encoded(), as: UTF8.self)
        switch state.withLock({ $0.enqueue(encoded, resolve: resolve) }) {
        case .failure(let refusal):
            resolve(.failure(refusal))
        case .success(let origin):
            wakeAppender()
            // One timer per command, whatever happens to it (taken, in doubt, queued again).
            DispatchQueue.global().asyncAfter(deadline: .now() + settings.commitTimeout.inSeconds) { [weak self] in
                self?.expire(origin)
            }
        }
    }

    // MARK: - Read barriers

    /// Looks for barriers past their deadline after `delay`.
    func scheduleBarrierSweep(after delay: Duration) {
        DispatchQueue.global().asyncAfter(deadline: .now() + max(.zero, delay).inSeconds) { [weak self] in
            self?.sweepBarriers()
        }
    }

    /// Tells the reads still waiting for the tailer after `--commit-timeout` that it did not come
    /// (`run(false)`: they answer 503); sweeps again when the oldest left is due.
    func sweepBarriers() {
        let timeout = settings.commitTimeout
        let (expired, oldest) = state.withLock { $0.expireBarriers(arrivedBy: .now - timeout) }
        for barrier in expired { barrier.run(false) }
        if let oldest { scheduleBarrierSweep(after: oldest + timeout - .now) }
    }

    // MARK: - Deadlines of commands

    /// A command whose waiter is still there at its deadline: one never sent never will be
    /// (503); one sent may be in the log, or may still get there (504 `outcomeUnknown`).
    func expire(_ origin: Int) {
        guard let waiter = state.withLock({ $0.expire(origin) }) else { return }
        let timeout = settings.commitTimeout.inSeconds
        if waiter.sent {
            waiter.resolve(
                .failure(
                    ClusterNode.outcomeUnknown(
                        "the cluster's database did not confirm the change within --commit-timeout (\(timeout) s)")))
        } else {
            waiter.resolve(
                .failure(
                    ClusterNode.unavailable(
                        "the cluster's database did not take the change within --commit-timeout (\(timeout) s)")))
        }
    }
}
