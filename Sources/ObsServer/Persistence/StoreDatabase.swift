import ObservationCore

/// How far a commit goes before the answers it holds are sent.
enum CommitSync: String, Sendable, CaseIterable {
    /// fsync every commit (SQLite `synchronous=FULL`): an answered write survives a power cut.
    case full
    /// Commit to the operating system, fsync at checkpoints (`synchronous=NORMAL`): an answered
    /// write survives `kill -9` and any crash of the server, not a crash of the machine.
    case normal
}

/// The data directory's database (SQLite, WAL): a command log on top of a checkpoint.
///
/// - `commands`: every command applied since the checkpoint, by position, in its compact
///   encoding. A commit appends the commands applied since the last one: one small row per
///   write, however many observers it reaches.
/// - `entities`: the checkpoint, one JSON document per class, object, observer, registration,
///   subscription, observer's last event id and the posting queue. A checkpoint writes the
///   entities changed since the last one and deletes the commands it covers.
/// - `meta`: the format, and the counters as of the checkpoint (its position, the revision,
///   the admin stream's last event id, the clock).
///
/// At start the store is rebuilt from the checkpoint, then the commands after it are applied
/// again: applying is deterministic, so this is the state that was acknowledged.
/// `synchronous` is `CommitSync`: with `full` a commit is on disk when it returns.
///
/// Pages are 4 KiB (a new database's; an existing one keeps its own): a commit appends a few
/// rows to the `commands` tree's last leaf, and with 1 KiB pages that leaf split every second
/// commit or so, 2.4 times the WAL frames (and `pwrite`s) per commit. The WAL is copied back
/// into the database every 1,000 pages (4 MiB, as 4,000 pages of 1 KiB were). The locking stays
/// SQLite's normal one although `locking_mode=EXCLUSIVE` would save its `fcntl`s (6 a commit):
/// another process may then not even read the database of a running server, the tests'
/// failure injection included.
final class StoreDatabase {
    static let fileName = "obs.sqlite"
    /// The layout of the tables; a database with another one is refused at start (format 1,
    /// entity rows only, is read as a checkpoint and upgraded).
    static let format = 2

    private let database: SQLiteDatabase
    private let upsert: SQLiteDatabase.Statement
    private let delete: SQLiteDatabase.Statement
    private let setMeta: SQLiteDatabase.Statement
    private let append: SQLiteDatabase.Statement
    private let begin: SQLiteDatabase.Statement
    private let commit: SQLiteDatabase.Statement
    private let rollback: SQLiteDatabase.Statement

    init(directory: String, sync: CommitSync = .full) throws(SQLiteError) {
        let path = directory + "/" + Self.fileName
        database = try SQLiteDatabase(path: path)
        do throws(SQLiteError) {
            try database.execute(
                """
                PRAGMA page_size=4096;
                PRAGMA journal_mode=WAL;
                PRAGMA synchronous=\(sync.rawValue.uppercased());
                PRAGMA wal_autocheckpoint=1000;
                CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS entities(
                    kind TEXT NOT NULL, id TEXT NOT NULL, document BLOB NOT NULL, PRIMARY KEY(kind, id)
                ) WITHOUT ROWID;
                CREATE TABLE IF NOT EXISTS commands(position INTEGER PRIMARY KEY, command BLOB NOT NULL);
                INSERT OR IGNORE INTO meta(key, value) VALUES('format', \(Self.format));
                UPDATE meta SET value = \(Self.format) WHERE key = 'format' AND value = 1;
                """)
        } catch {
            throw SQLiteError(description: "\(path) is not a usable ObsServer database: \(error)")
        }
        upsert = try database.prepare("INSERT OR REPLACE INTO entities(kind, id, document) VALUES(?, ?, ?)")
        delete = try database.prepare("DELETE FROM entities WHERE kind = ? AND id = ?")
        setMeta = try database.prepare("INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)")
        append = try database.prepare("INSERT INTO commands(position, command) VALUES(?, ?)")
        begin = try database.prepare("BEGIN IMMEDIATE")
        commit = try database.prepare("COMMIT")
        rollback = try database.prepare("ROLLBACK")
        let format = try meta()["format"]
        guard format == Self.format else {
            throw SQLiteError(description: "\(path) has data format \(format ?? 0); this server reads \(Self.format)")
        }
    }

    /// The checkpoint and the commands after it, for rebuilding the store at start.
    func load() throws(SQLiteError) -> PersistedImage {
        let counters = try meta()
        var image = PersistedImage(
            revision: counters["revision"] ?? 0, adminLastEventID: counters["adminLastEventId"] ?? 0,
            clock: Int64(counters["clock"] ?? 0), checkpoint: counters["checkpoint"] ?? 0)
        let rows = try database.prepare("SELECT kind, id, document FROM entities")
        while try rows.step() {
            let kindName = rows.text(0)
            guard let kind = EntityKind(rawValue: kindName) else {
                throw SQLiteError(description: "unknown entity kind '\(kindName)' in the database")
            }
            image.rows.append(PersistedRow(kind: kind, id: rows.text(1), document: rows.bytes(2)))
        }
        let commands = try database.prepare(
            "SELECT position, command FROM commands WHERE position > ? ORDER BY position")
        commands.bind(1, image.checkpoint)
        while try commands.step() { image.commands.append((commands.int(0), commands.bytes(1))) }
        return image
    }

    /// Writes a batch in one transaction: its checkpoint (entity rows, counters, and the
    /// commands it covers deleted), then its commands appended.
    func write(_ batch: JournalBatch) throws(SQLiteError) {
        // A transaction left open (its rollback failed last time) is rolled back first, or
        // every retry would fail to begin.
        if database.inTransaction { _ = rollback.runReportingFailure() }
        if let failure = begin.runReportingFailure() { throw failure }
        if let failure = apply(batch) ?? commit.runReportingFailure() {
            _ = rollback.runReportingFailure()
            throw failure
        }
    }

    /// Writes one small row in a transaction of its own: whether the disk takes a commit now
    /// (after a rollback, when nothing else is waiting to be written).
    func probe() throws(SQLiteError) {
        if database.inTransaction { _ = rollback.runReportingFailure() }
        if let failure = begin.runReportingFailure() { throw failure }
        setMeta.bind(1, "probe")
        setMeta.bind(2, 1)
        if let failure = setMeta.runReportingFailure() ?? commit.runReportingFailure() {
            _ = rollback.runReportingFailure()
            throw failure
        }
    }

    /// The statements of one transaction; the first failure, if any.
    private func apply(_ batch: JournalBatch) -> SQLiteError? {
        if let checkpoint = batch.checkpoint {
            for row in checkpoint.rows() {
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
            do {
                try database.execute("DELETE FROM commands WHERE position <= \(checkpoint.position)")
            } catch {
                return error
            }
            for (key, value) in [
                ("checkpoint", checkpoint.position), ("revision", checkpoint.revision),
                ("adminLastEventId", checkpoint.adminLastEventID), ("clock", Int(checkpoint.clock)),
            ] {
                setMeta.bind(1, key)
                setMeta.bind(2, value)
                if let failure = setMeta.runReportingFailure() { return failure }
            }
        }
        for (position, bytes) in batch.commands {
            append.bind(1, position)
            append.bind(2, bytes)
            if let failure = append.runReportingFailure() { return failure }
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
