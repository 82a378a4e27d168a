import ObservationCore

/// What a cluster node's threads and its callers share, behind `ClusterShared.state`.
///
/// A plain value: the transitions several callers need are in `ClusterState+Queue.swift` and
/// return what the caller must do once the lock is released (answers to give, barriers to run).
struct ClusterState: Sendable {
    /// A command waiting for the appender: this node's counter for it and its encoding.
    struct Queued: Sendable, Equatable {
        let origin: Int
        let command: String
    }

    /// Where a command's answer goes once it is applied (or refused).
    struct Waiter: Sendable {
        let resolve: ClusterNode.Resolve
        /// Its append was sent: until the log shows it, whether it took effect is not known.
        var sent = false
    }

    /// An incarnation the presence thread reported down (`nodeDown`).
    struct DownReport: Sendable, Hashable {
        let node: String
        let incarnation: Int

        var holder: String { "\(node)#\(incarnation)" }
    }

    /// A read waiting for the tailer's next complete read, since `since`.
    struct Barrier: Sendable {
        /// Arrival order (`nextBarrier`).
        let number: Int
        /// Called once: `true` to read now, `false` when its deadline passed first.
        let run: @Sendable (Bool) -> Void
        let since: ContinuousClock.Instant
    }

    var nextOrigin = 1
    /// Encoded commands waiting for the appender, oldest first.
    var queue: [Queued] = []
    /// Answers waiting for their command to come back from the log, by origin.
    var waiters: [Int: Waiter] = [:]
    /// Reads waiting for the tailer's next complete read, oldest first.
    var barriers: [Barrier] = []
    /// A sweep of the barriers past their deadline is scheduled (`ClusterShared.sweepBarriers`).
    var barrierSweep = false
    /// The number the next barrier gets.
    var nextBarrier = 0
    /// `nodeDown` commands on their way to the log (a round does not report them again)…
    var reportingDown: Set<DownReport> = []
    /// …and those applied, for the presence thread to record (`obs_nodes.reported_down`).
    var reportedDown: [DownReport] = []
    /// This incarnation's name in stream commands and log rows; nil while not registered.
    var tag: String? {
        didSet { if let tag { ownTags.insert(tag) } }
    }
    /// Every incarnation of this process: its log rows answer its waiters (an append made
    /// before it registered again is applied after).
    var ownTags: Set<String> = []
    var tailerConnected = false
    /// The first complete read of the log is done (the replica has caught up once).
    var caughtUp = false
    var keeper = false
    var stopping = false
    /// Live nodes (as the presence thread last counted) and the log's head (as last read).
    var nodes = 0
    var head = 0
    /// Applying failed (a command this node cannot read): it stops applying and reports unhealthy.
    var broken: String?
    var lastApplied = ContinuousClock.now
    /// The keeper's copy of the state at a checkpoint position, for the presence thread to write.
    /// (The latest two: under load the newest is often not confirmed yet when the older is.)
    var pendingCheckpoints: [JournalBatch.Checkpoint] = []
    /// The position of the last checkpoint this node wrote or loaded (the log behind it may go).
    var checkpointed = 0
    /// The digest of everything applied, as of `digestPosition` (the tailer's).
    var digest = ApplyDigest()
    var digestPosition = 0
    /// Samples of the digest, published and judged by the presence thread.
    var divergence = DivergenceCheck()
    /// The node was outvoted: the tailer rebuilds the replica from the checkpoint and the log.
    var rebuild: Divergence?
    var rebuilds = 0
    /// When the recent rebuilds happened: a node that keeps diverging stops (`halt`).
    var recentRebuilds: [ContinuousClock.Instant] = []
}
