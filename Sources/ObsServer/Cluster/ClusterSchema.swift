import ObservationCore

/// The cluster's tables in PostgreSQL, and the checks a node makes before it joins.
///
/// - `obs_cluster`: one row: `head`, the position of the last command in the log (locked by
///   every append until its commit, so positions are handed out in commit order with no
///   holes), the log's `format` and the `config` every node must share.
/// - `obs_log`: the commands, by position (`seq`); `(node, origin)` is unique: the appending
///   node's incarnation and its own counter, so an append whose commit outcome was lost can
///   be looked up.
/// - `obs_nodes`: one row per node id: its current incarnation, the key of the advisory lock
///   it holds while it lives, the last incarnation reported down, and what it has applied.
/// - `obs_checkpoint` (one row) and `obs_checkpoint_rows`: the keeper's latest checkpoint, the
///   state as of a log position (the documents of the single server's `entities` table, with
///   streams, lease deadlines and counters), so that the log behind it can be deleted and a
///   starting node need not apply the whole history.
/// - `obs_digests`: each node's digest of what it applied, at sampled log positions, for the
///   others to compare theirs with (`DivergenceCheck`).
enum ClusterSchema {
    /// The layout of the tables and the command encoding; a node refuses any other.
    static let format = 2
    /// Advisory lock class ids: the schema's creation and the keeper (object 0), and node liveness.
    static let lockClass: Int32 = 0x0B5C
    static let livenessClass: Int32 = 0x0B5D

    /// Creates the tables if they are missing (under an advisory lock, so concurrent first starts
    /// do not race), then checks the format and `config`.
    static func prepare(_ connection: PGConnection, config: String) throws {
        try connection.query(ClusterSQL.createTables)
        try connection.query(ClusterSQL.createClusterRow, ["\(format)", config])
        guard let row = try connection.query(ClusterSQL.clusterRow).first,
            let formatText = row[0], let shared = row[1]
        else { throw ConfigError("the cluster's obs_cluster table has no row") }
        guard Int(formatText) == format else {
            throw ConfigError("the cluster's log has format \(formatText); this node reads format \(format)")
        }
        guard shared == config else {
            throw ConfigError(
                """
                this node's limits differ from the cluster's, so it would decide requests differently: \
                cluster \(shared), this node \(config)
                """)
        }
    }

    /// The settings that change what applying a command decides: every node must share them.
    static func config(_ limits: StoreLimits) -> String {
        [
            "encoding=\(Command.encodingVersion)", "maxObjects=\(limits.maxObjects)",
            "maxObservers=\(limits.maxObservers)",
            "maxRegistrationsPerObserver=\(limits.maxRegistrationsPerObserver)",
            "adminReplay=\(limits.adminReplay)", "maxReplayBytes=\(limits.maxReplayBytes)",
            "maxAdminReplayBytes=\(limits.maxAdminReplayBytes)",
            "maxQueuedNotifications=\(limits.maxQueuedNotifications)",
            "maxQueuedNotificationBytes=\(limits.maxQueuedNotificationBytes)",
            "maxIdempotencyKeys=\(limits.maxIdempotencyKeys)", "maxIdempotencyBytes=\(limits.maxIdempotencyBytes)",
            "maxQueries=\(limits.maxQueries)", "maxTokens=\(limits.maxTokens)",
            "maxTransactionOps=\(limits.maxTransactionOps)",
        ].joined(separator: ";")
    }

    /// A node's registration: its incarnation.
    struct Registration: Sendable {
        let incarnation: Int
        /// The previous incarnation, if the keeper has not reported it down (this node does, now).
        let previousDown: Int?

        /// What stream commands and log rows name this incarnation by.
        func tag(_ node: String) -> String { "\(node)#\(incarnation)" }
    }

    /// Registers `node` on `connection` (its liveness connection): takes the node's liveness lock
    /// (waiting up to `wait` for an earlier process of the same id to let go of it), then starts a
    /// new incarnation. The lock is held for as long as the connection lives.
    static func register(_ node: String, on connection: PGConnection, wait: Duration) throws -> Registration {
        try connection.query(ClusterSQL.createNode, [node])
        guard let key = try connection.integer(ClusterSQL.nodeLockKey, [node]) else {
            throw ConfigError("cannot register node \(node)")
        }
        let deadline = ContinuousClock.now + wait
        while try !tryLock(livenessClass, Int32(truncatingIfNeeded: key), on: connection) {
            guard ContinuousClock.now < deadline else {
                throw ConfigError("another process is serving as node \(node) (its liveness lock is held)")
            }
            sleepThread(.milliseconds(100))
        }
        guard
            let row = try connection.query(ClusterSQL.newIncarnation, [node]).first,
            let incarnation = row[0].flatMap({ Int($0) }), let reported = row[1].flatMap({ Int($0) })
        else { throw ConfigError("cannot register node \(node)") }
        let previous = incarnation - 1
        return Registration(
            incarnation: incarnation, previousDown: previous > reported && previous > 0 ? previous : nil)
    }

    /// Takes a session-level advisory lock if it is free; whether it was.
    static func tryLock(_ classID: Int32, _ objectID: Int32, on connection: PGConnection) throws -> Bool {
        try connection.query(ClusterSQL.tryAdvisoryLock, ["\(classID)", "\(objectID)"]).first?.first == "t"
    }
}
