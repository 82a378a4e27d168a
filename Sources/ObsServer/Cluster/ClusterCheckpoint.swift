import ObservationCore

/// The cluster's checkpoint in PostgreSQL: written by the keeper, read by a starting node.
///
/// The keeper takes a copy of its state right after applying a log position that is a
/// multiple of `--checkpoint-commands` (so every replica would have the same state there),
/// writes every entity's document in one transaction (only if no later checkpoint is there),
/// then deletes the log up to the oldest of that position and what every live node has
/// applied: a lagging node never loses a row it still needs, and a starting node registers
/// (its `applied` reads 0) before it reads the checkpoint, so nothing it needs goes either.
enum ClusterCheckpoint {
    /// Writes `checkpoint`; returns false when a later one is there already.
    static func write(_ checkpoint: JournalBatch.Checkpoint, on connection: PGConnection) throws -> Bool {
        let rows = checkpoint.rows()
        try connection.query("BEGIN")
        do {
            let current = try connection.integer("SELECT position FROM obs_checkpoint WHERE id = 1 FOR UPDATE") ?? 0
            guard current < checkpoint.position else {
                try connection.query("ROLLBACK")
                return false
            }
            try connection.query("DELETE FROM obs_checkpoint_rows")
            for start in stride(from: 0, to: rows.count, by: 1000) {
                let page = rows[start..<min(rows.count, start + 1000)]
                try connection.query(
                    """
                    INSERT INTO obs_checkpoint_rows(kind, id, document)
                    SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
                    """,
                    [
                        PGConnection.arrayLiteral(page.map(\.kind.rawValue)), PGConnection.arrayLiteral(page.map(\.id)),
                        PGConnection.arrayLiteral(page.map { String(decoding: $0.document ?? [], as: UTF8.self) }),
                    ])
            }
            try connection.query(
                """
                INSERT INTO obs_checkpoint(id, position, revision, admin_last_event_id, clock, counters)
                VALUES (1, $1, $2, $3, $4, $5)
                ON CONFLICT (id) DO UPDATE SET position = $1, revision = $2, admin_last_event_id = $3, clock = $4,
                    counters = $5
                """,
                [
                    "\(checkpoint.position)", "\(checkpoint.revision)", "\(checkpoint.adminLastEventID)",
                    "\(checkpoint.clock)", String(decoding: JSON.object(checkpoint.counters).encoded(), as: UTF8.self),
                ])
            try connection.query("COMMIT")
        } catch {
            _ = try? connection.query("ROLLBACK")
            throw error
        }
        return true
    }

    /// Deletes the log behind `position` that no live node still needs, and digests older than
    /// any node still judges; returns the log rows deleted.
    @discardableResult
    static func truncate(through position: Int, on connection: PGConnection) throws -> Int {
        let rows = try connection.query(
            """
            WITH horizon AS (
                SELECT least($1::bigint, coalesce(min(applied), 0)) AS seq
                FROM obs_nodes WHERE incarnation > reported_down),
            digests AS (
                DELETE FROM obs_digests WHERE seq < (SELECT seq FROM horizon) - $2::bigint)
            DELETE FROM obs_log WHERE seq <= (SELECT seq FROM horizon) RETURNING 1
            """, ["\(position)", "\(DivergenceCheck.every * DivergenceCheck.kept)"])
        return rows.count
    }

    /// The latest checkpoint, read in one snapshot (nil: none yet, apply the log from its start).
    static func load(on connection: PGConnection) throws -> PersistedImage? {
        try connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        defer { _ = try? connection.query("COMMIT") }
        guard
            let row = try connection.query(
                "SELECT position, revision, admin_last_event_id, clock, counters FROM obs_checkpoint WHERE id = 1"
            ).first
        else { return nil }
        let numbers = row.prefix(4).map { $0.flatMap { Int($0) } ?? 0 }
        guard case .object(let counters)? = try? JSONParser.parse(Array((row[4] ?? "").utf8)) else {
            throw ConfigError("the cluster's checkpoint has unreadable counters")
        }
        var image = PersistedImage(
            revision: numbers[1], adminLastEventID: numbers[2], clock: Int64(numbers[3]), checkpoint: numbers[0])
        image.exact = true
        image.counters = counters
        for document in try connection.query("SELECT kind, id, document FROM obs_checkpoint_rows ORDER BY kind, id") {
            guard let kindName = document[0], let kind = EntityKind(rawValue: kindName), let id = document[1],
                let text = document[2]
            else { throw ConfigError("the cluster's checkpoint has an unreadable row") }
            image.rows.append(PersistedRow(kind: kind, id: id, document: Array(text.utf8)))
        }
        return image
    }
}
