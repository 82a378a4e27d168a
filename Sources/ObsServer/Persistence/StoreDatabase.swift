import ObservationCore

/// The data directory's database (SQLite, WAL): one row per entity, its JSON document,
/// and the counters that must survive a restart.
///
/// How far a commit goes before the answers it holds are sent.
enum CommitSync: String, Sendable, CaseIterable {
    /// fsync every commit (SQLite `synchronous=FULL`): an answered write survives a power cut.
    case full
    /// Commit to the operating system, fsync at checkpoints (`synchronous=NORMAL`): an answered
    /// write survives `kill -9` and any crash of the server, not a crash of the machine.
    case normal
}

/// `synchronous` is `CommitSync`: with `full` a commit is on disk when it returns.
final class StoreDatabase {
    static let fileName = "obs.sqlite"
    /// The layout of the tables; a database with another one is refused at start.
    static let format = 1

    private let database: SQLiteDatabase
    private let upsert: SQLiteDatabase.Statement
    private let delete: SQLiteDatabase.Statement
    private let setMeta: SQLiteDatabase.Statement

    init(directory: String, sync: CommitSync = .full) throws(SQLiteError) {
        let path = directory + "/" + Self.fileName
        database = try SQLiteDatabase(path: path)
        do throws(SQLiteError) {
            try database.execute(
                """
                PRAGMA page_size=1024;
                PRAGMA journal_mode=WAL;
                PRAGMA synchronous=\(sync.rawValue.uppercased());
                PRAGMA wal_autocheckpoint=4000;
                CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS entities(
                    kind TEXT NOT NULL, id TEXT NOT NULL, document BLOB NOT NULL, PRIMARY KEY(kind, id)
                ) WITHOUT ROWID;
                INSERT OR IGNORE INTO meta(key, value) VALUES('format', \(Self.format));
                """)
        } catch {
            throw SQLiteError(description: "\(path) is not a usable ObsServer database: \(error)")
        }
        upsert = try database.prepare("INSERT OR REPLACE INTO entities(kind, id, document) VALUES(?, ?, ?)")
        delete = try database.prepare("DELETE FROM entities WHERE kind = ? AND id = ?")
        setMeta = try database.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)")
        let format = try meta()["format"]
        guard format == Self.format else {
            throw SQLiteError(description: "\(path) has data format \(format ?? 0); this server reads \(Self.format)")
        }
    }

    /// Everything stored, for rebuilding the store at start.
    func load() throws(SQLiteError) -> PersistedImage {
        let counters = try meta()
        var image = PersistedImage(
            revision: counters["revision"] ?? 0, adminLastEventID: counters["adminLastEventId"] ?? 0)
        let select = try database.prepare("SELECT kind, id, document FROM entities")
        while try select.step() {
            let kindName = select.text(0)
            guard let kind = EntityKind(rawValue: kindName) else {
                throw SQLiteError(description: "unknown entity kind '\(kindName)' in the database")
            }
            image.rows.append(PersistedRow(kind: kind, id: select.text(1), document: select.bytes(2)))
        }
        return image
    }

    /// Writes rows (a nil document deletes) and the counters in one transaction.
    func write(_ rows: [PersistedRow], revision: Int, adminLastEventID: Int) throws(SQLiteError) {
        try database.execute("BEGIN IMMEDIATE")
        if let failure = apply(rows, counters: [("revision", revision), ("adminLastEventId", adminLastEventID)]) {
            try? database.execute("ROLLBACK")
            throw failure
        }
        try database.execute("COMMIT")
    }

    /// The statements of one transaction; the first failure, if any.
    private func apply(_ rows: [PersistedRow], counters: [(String, Int)]) -> SQLiteError? {
        for row in rows {
            if let document = row.document {
                upsert.bind(1, row.kind.rawValue)
                upsert.bind(2, row.id)
                upsert.bind(3, document)
                if let failure = upsert.runReportingFailure() { return failure }
            } else {
                delete.bind(1, row.kind.rawValue)
                delete.bind(2, row.id)
                if let failure = delete.runReportingFailure() { return failure }
            }
        }
        for (key, value) in counters {
            setMeta.bind(1, key)
            setMeta.bind(2, value)
            if let failure = setMeta.runReportingFailure() { return failure }
        }
        return nil
    }

    private func meta() throws(SQLiteError) -> [String: Int] {
        let select = try database.prepare("SELECT key, value FROM meta")
        var values: [String: Int] = [:]
        while try select.step() { values[select.text(0)] = select.int(1) }
        return values
    }
}
