/// Every SQL statement the cluster runs, by name, in one place (the tables are described in
/// `ClusterSchema`). Parameters are text (`$1`, `$2`, …); arrays go as `PGConnection.arrayLiteral`.
enum ClusterSQL {
    // MARK: - Transactions and notifications

    static let begin = "BEGIN"
    static let beginSnapshot = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
    static let commit = "COMMIT"
    static let rollback = "ROLLBACK"
    /// The tailer's wake-up: every append notifies `obs_log`.
    static let listen = "LISTEN obs_log"

    // MARK: - Schema

    /// Creates what is missing, under the schema's advisory lock (concurrent first starts do not race).
    static let createTables = """
        BEGIN;
        SELECT pg_advisory_xact_lock(\(ClusterSchema.lockClass), 1);
        CREATE TABLE IF NOT EXISTS obs_cluster(
            id int PRIMARY KEY CHECK (id = 1), head bigint NOT NULL, format int NOT NULL, config text NOT NULL);
        CREATE TABLE IF NOT EXISTS obs_log(
            seq bigint PRIMARY KEY, node text NOT NULL, origin bigint NOT NULL, command text NOT NULL,
            UNIQUE (node, origin));
        CREATE SEQUENCE IF NOT EXISTS obs_node_keys;
        CREATE TABLE IF NOT EXISTS obs_nodes(
            node text PRIMARY KEY, incarnation bigint NOT NULL DEFAULT 0,
            lock_key int NOT NULL DEFAULT nextval('obs_node_keys'), reported_down bigint NOT NULL DEFAULT 0,
            applied bigint NOT NULL DEFAULT 0);
        CREATE TABLE IF NOT EXISTS obs_checkpoint(
            id int PRIMARY KEY CHECK (id = 1), position bigint NOT NULL, revision bigint NOT NULL,
            admin_last_event_id bigint NOT NULL, clock bigint NOT NULL, counters text NOT NULL);
        CREATE TABLE IF NOT EXISTS obs_checkpoint_rows(
            kind text NOT NULL, id text NOT NULL, document text NOT NULL, PRIMARY KEY (kind, id));
        CREATE TABLE IF NOT EXISTS obs_digests(
            seq bigint NOT NULL, node text NOT NULL, digest text NOT NULL, PRIMARY KEY (seq, node));
        COMMIT;
        """
    /// $1 format, $2 config.
    static let createClusterRow =
        "INSERT INTO obs_cluster(id, head, format, config) VALUES (1, 0, $1, $2) ON CONFLICT (id) DO NOTHING"
    static let clusterRow = "SELECT format, config FROM obs_cluster WHERE id = 1"
    static let head = "SELECT head FROM obs_cluster WHERE id = 1"

    // MARK: - Nodes and advisory locks

    /// $1 node.
    static let createNode = "INSERT INTO obs_nodes(node) VALUES ($1) ON CONFLICT (node) DO NOTHING"
    /// $1 node.
    static let nodeLockKey = "SELECT lock_key FROM obs_nodes WHERE node = $1"
    /// $1 node: a new incarnation, which has applied nothing yet.
    static let newIncarnation = """
        UPDATE obs_nodes SET incarnation = incarnation + 1, applied = 0 WHERE node = $1
        RETURNING incarnation, reported_down
        """
    /// $1 node, $2 the log position it has applied.
    static let publishApplied = "UPDATE obs_nodes SET applied = $2 WHERE node = $1"
    static let liveNodeCount = "SELECT count(*) FROM obs_nodes WHERE incarnation > reported_down"
    /// $1 this node: the other live incarnations, with their liveness locks' keys.
    static let otherLiveNodes =
        "SELECT node, incarnation, lock_key FROM obs_nodes WHERE incarnation > reported_down AND node <> $1 ORDER BY node"
    /// $1 node, $2 incarnation.
    static let markReportedDown = "UPDATE obs_nodes SET reported_down = greatest(reported_down, $2) WHERE node = $1"
    /// $1 class, $2 object.
    static let tryAdvisoryLock = "SELECT pg_try_advisory_lock($1, $2)"
    /// $1 class, $2 object.
    static let advisoryUnlock = "SELECT pg_advisory_unlock($1, $2)"

    // MARK: - The log

    /// One transaction: lock the head row, take the next positions, insert, notify.
    /// $1 count, $2 tag, $3 origins (bigint[]), $4 commands (text[]).
    static let append = """
        WITH h AS (UPDATE obs_cluster SET head = head + $1 WHERE id = 1 RETURNING head),
        rows AS (
            INSERT INTO obs_log(seq, node, origin, command)
            SELECT h.head - $1 + t.n, $2, t.origin, t.command
            FROM h, unnest($3::bigint[], $4::text[]) WITH ORDINALITY AS t(origin, command, n)
            RETURNING seq)
        SELECT pg_notify('obs_log', max(seq)::text) FROM rows
        """
    /// $1 after this position, $2 at most this many rows.
    static let readLog = "SELECT seq, node, origin, command FROM obs_log WHERE seq > $1 ORDER BY seq LIMIT $2"
    /// $1 tag, $2 origins (bigint[]): those of the tag's appends that are in the log.
    static let appendedOrigins = "SELECT origin FROM obs_log WHERE node = $1 AND origin = ANY($2::bigint[])"
    /// $1 pid.
    static let terminateBackend = "SELECT pg_terminate_backend($1)"
    /// $1 pid.
    static let backendCount = "SELECT count(*) FROM pg_stat_activity WHERE pid = $1"

    // MARK: - Checkpoints

    static let checkpointPositionForUpdate = "SELECT position FROM obs_checkpoint WHERE id = 1 FOR UPDATE"
    static let deleteCheckpointRows = "DELETE FROM obs_checkpoint_rows"
    /// $1 kinds, $2 ids, $3 documents (text[] each).
    static let insertCheckpointRows = """
        INSERT INTO obs_checkpoint_rows(kind, id, document)
        SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
        """
    /// $1 position, $2 revision, $3 admin last event id, $4 clock, $5 counters (JSON).
    static let writeCheckpoint = """
        INSERT INTO obs_checkpoint(id, position, revision, admin_last_event_id, clock, counters)
        VALUES (1, $1, $2, $3, $4, $5)
        ON CONFLICT (id) DO UPDATE SET position = $1, revision = $2, admin_last_event_id = $3, clock = $4,
            counters = $5
        """
    static let readCheckpoint =
        "SELECT position, revision, admin_last_event_id, clock, counters FROM obs_checkpoint WHERE id = 1"
    static let readCheckpointRows = "SELECT kind, id, document FROM obs_checkpoint_rows ORDER BY kind, id"
    /// $1 the checkpoint's position, $2 how far behind the horizon digests are kept; returns a row per log row deleted.
    static let truncate = """
        WITH horizon AS (
            SELECT least($1::bigint, coalesce(min(applied), 0)) AS seq
            FROM obs_nodes WHERE incarnation > reported_down),
        digests AS (
            DELETE FROM obs_digests WHERE seq < (SELECT seq FROM horizon) - $2::bigint)
        DELETE FROM obs_log WHERE seq <= (SELECT seq FROM horizon) RETURNING 1
        """

    // MARK: - Digests

    /// $1 node, $2 positions (bigint[]), $3 hex digests (text[]).
    static let publishDigests = """
        INSERT INTO obs_digests(seq, node, digest) SELECT t.seq, $1, t.digest
        FROM unnest($2::bigint[], $3::text[]) AS t(seq, digest)
        ON CONFLICT (seq, node) DO UPDATE SET digest = excluded.digest
        """
    /// $1 positions (bigint[]), $2 this node: the live other nodes' digests there.
    static let peerDigests = """
        SELECT d.seq, d.node, d.digest FROM obs_digests d JOIN obs_nodes n USING (node)
        WHERE d.seq = ANY($1::bigint[]) AND d.node <> $2 AND n.incarnation > n.reported_down
        """
}
