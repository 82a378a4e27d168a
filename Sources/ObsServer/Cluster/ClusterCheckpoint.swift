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
        try connection.query(ClusterSQL.begin)
        do {
            let current = try connection.integer(ClusterSQL.checkpointPositionForUpdate) ?? 0
            guard current < checkpoint.position else {
                try connection.query(ClusterSQL.rollback)
                return false
            }
            try connection.query(ClusterSQL.deleteCheckpointRows)
            for start in stride(from: 0, to: rows.count, by: 1000) {
                let page = rows[start..<min(rows.count, start + 1000)]
                try connection.query(
                    ClusterSQL.insertCheckpointRows,
                    [
                        PGConnection.arrayLiteral(page.map(\.kind.rawValue)), PGConnection.arrayLiteral(page.map(\.id)),
                        PGConnection.arrayLiteral(page.map { String(decoding: $0.document ?? [], as: UTF8.self) }),
                    ])
            }
            try connection.query(
                ClusterSQL.writeCheckpoint,
                [
                    "\(checkpoint.position)", "\(checkpoint.revision)", "\(checkpoint.adminLastEventID)",
                    "\(checkpoint.clock)", String(decoding: JSON.object(checkpoint.counters).encoded(), as: UTF8.self),
                ])
            try connection.query(ClusterSQL.commit)
        } catch {
            _ = try? connection.query(ClusterSQL.rollback)
            throw error
        }
        return true
    }

    /// Deletes the log behind `position` that no live node still needs, and digests older than
    /// any node still judges; returns the log rows deleted.
    @discardableResult
    static func truncate(through position: Int, on connection: PGConnection) throws -> Int {
        let rows = try connection.query(
            ClusterSQL.truncate, ["\(position)", "\(DivergenceCheck.every * DivergenceCheck.kept)"])
        return rows.count
    }

    /// The latest checkpoint, read in one snapshot (nil: none yet, apply the log from its start).
    static func load(on connection: PGConnection) throws -> PersistedImage? {
        try connection.query(ClusterSQL.beginSnapshot)
        defer { _ = try? connection.query(ClusterSQL.commit) }
        guard
            let row = try connection.query(ClusterSQL.readCheckpoint).first
        else { return nil }
        let numbers = row.prefix(4).map { $0.flatMap { Int($0) } ?? 0 }
        guard case .object(let counters)? = try? JSONParser.parse(Array((row[4] ?? "").utf8)) else {
            throw ConfigError("the cluster's checkpoint has unreadable counters")
        }
        var image = PersistedImage(
            revision: numbers[1], adminLastEventID: numbers[2], clock: Int64(numbers[3]), checkpoint: numbers[0])
        image.exact = true
        image.counters = counters
        for document in try connection.query(ClusterSQL.readCheckpointRows) {
            guard let kindName = document[0], let kind = EntityKind(rawValue: kindName), let id = document[1],
                let text = document[2]
            else { throw ConfigError("the cluster's checkpoint has an unreadable row") }
            image.rows.append(PersistedRow(kind: kind, id: id, document: Array(text.utf8)))
        }
        return image
    }
}
