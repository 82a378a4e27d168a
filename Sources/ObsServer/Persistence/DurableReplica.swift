import ObservationCore

/// A server with a data directory (`--data-dir`): a write's answer waits at the commit gate
/// until its journal position is durable, or is refused once the committer rolled it back.
struct DurableReplica: Replica {
    let store: Store
    let committer: Committer

    func submit(_ command: Command, render: @escaping @Sendable (Outcome) -> HTTPResponse) throws(CoreError) -> Reply {
        let executed = try store.submit(command)
        let response = render(executed.outcome)
        guard let ticket = executed.ticket else { return .now(response) }
        return committer.gate.reply(response, whenDurable: ticket)
    }

    var metrics: [(name: String, type: String, help: String, value: String)] {
        let figures = committer.figures
        return [
            ("obs_commits_total", "counter", "Group commits to the data directory.", "\(figures.commits)"),
            ("obs_commit_rows_total", "counter", "Commands appended to the log by group commits.", "\(figures.rows)"),
            ("obs_checkpoints_total", "counter", "Checkpoints written.", "\(figures.checkpoints)"),
            ("obs_commit_failures_total", "counter", "Failed commits (retried).", "\(figures.failures)"),
            (
                "obs_commit_rollbacks_total", "counter",
                "Rollbacks to the data directory (a commit failed past --commit-timeout).", "\(figures.rollbacks)"
            ),
            ("obs_commit_seconds_total", "counter", "Time spent writing commits.", "\(figures.seconds)"),
        ]
    }

    /// The committer first, then `restart`: no stream is open any more, and leases count from
    /// now (a command like any other, so that a later start replays it too).
    func start() throws {
        committer.start()
        _ = try store.as(.server).issue(.restart)
    }

    func stop() {
        committer.stop()
    }
}
