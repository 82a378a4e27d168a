import Dispatch
import ObservationCore

/// Submitting commands to the appender's queue, with their deadline (`--commit-timeout`).
extension ClusterShared {
    /// Queues `command` for the appender; `resolve` gets its outcome once this node has applied
    /// it (on the tailer's thread), or 503 when the node cannot append now or the command is
    /// still queued at its deadline.
    func submit(_ command: Command, resolve: @escaping ClusterNode.Resolve) {
        let encoded = String(decoding: command.encoded(), as: UTF8.self)
        switch state.withLock({ $0.enqueue(encoded, resolve: resolve) }) {
        case .failure(let refusal):
            resolve(.failure(refusal))
        case .success(let origin):
            wakeAppender()
            DispatchQueue.global().asyncAfter(deadline: .now() + settings.commitTimeout.inSeconds) { [weak self] in
                self?.dropIfQueued(origin)
            }
        }
    }

    /// A command still queued at its deadline (the database cannot take it) never will be: it
    /// leaves the queue, and its answer is 503. One the appender took is decided in the database.
    func dropIfQueued(_ origin: Int) {
        let waiter = state.withLock { $0.dropIfQueued(origin) }
        waiter?.resolve(
            .failure(ClusterNode.unavailable("the cluster's database did not take the change within --commit-timeout")))
    }

    /// Submits and waits for the outcome, at most the commit timeout (see `ClusterNode.submitAndWait`).
    func submitAndWait(_ command: Command) -> Result<Outcome, CoreError> {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Result<Outcome, CoreError>?>(nil)
        submit(command) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        _ = done.wait(timeout: .now() + settings.commitTimeout.inSeconds)
        return result.withLock { $0 } ?? .failure(ClusterNode.unavailable("no outcome within --commit-timeout"))
    }
}
