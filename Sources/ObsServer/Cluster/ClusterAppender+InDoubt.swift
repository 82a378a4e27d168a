/// An append whose connection broke, or whose answer did not come in time: whether it
/// committed is unknown.
extension ClusterAppender {
    /// How long the resolution waits for the lost server process to end before it starts over
    /// (terminating it again on a new connection).
    static let backendEndWait = Duration.seconds(10)

    /// Once the old server process is gone (so it cannot commit later), the commands found in
    /// the log are left to the tailer (their answers come from applying them); the others never
    /// happened: those still waiting go back to the front of the queue (their origins are
    /// unique: a retry cannot apply twice), those answered 504 meanwhile are dropped.
    ///
    /// Each attempt is bounded (the connection's timeouts, `backendEndWait`); it tries again,
    /// with backoff, until the database answers or the node stops. It holds up no answer: the
    /// batch's commands get 504 at their deadlines, those queued behind it 503.
    func resolveInDoubt(_ batch: [ClusterState.Queued], as tag: String, lostBackend: Int32) {
        var backoff = ClusterBackoff()
        while !shared.isStopping {
            do {
                let log = try connect()
                try log.terminateBackend(lostBackend)
                try waitUntilEnded(lostBackend, on: log)
                let found = try log.appendedOrigins(batch.map(\.origin), by: tag)
                let requeued = shared.state.withLock { $0.requeue(batch.filter { !found.contains($0.origin) }) }
                if requeued > 0 { shared.wakeAppender() }
                if !found.isEmpty { shared.wakeTailer() }
                return
            } catch {
                shared.logger.warning("cluster append in doubt, resolving: \(error)")
                backoff.sleep()
            }
        }
    }

    private func waitUntilEnded(_ pid: Int32, on log: any ClusterAppendLog) throws {
        let deadline = ContinuousClock.now + Self.backendEndWait
        while try log.backendExists(pid) {
            guard ContinuousClock.now < deadline else {
                throw PGError(
                    description: "server process \(pid) did not end within \(Self.backendEndWait)",
                    connectionLost: false)
            }
            sleepThread(.milliseconds(10))
        }
    }
}
