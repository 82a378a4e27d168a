private import CSQLite

/// A SQLite failure: what was being done, and SQLite's own message.
struct SQLiteError: Error, CustomStringConvertible {
    let description: String
}

/// One SQLite database connection, and the only Swift type that sees SQLite.
///
/// Not thread-safe: one thread uses it at a time (the loader at start, then the committer).
final class SQLiteDatabase {
    private let handle: OpaquePointer

    /// Opens (creating if needed) the database at `path`.
    init(path: String) throws(SQLiteError) {
        var opened: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let status = sqlite3_open_v2(path, &opened, flags, nil)
        guard status == SQLITE_OK, let opened else {
            let message = opened.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close(opened)
            throw SQLiteError(description: "cannot open \(path): \(message)")
        }
        handle = opened
        sqlite3_busy_timeout(handle, 1000)
    }

    deinit {
        sqlite3_close_v2(handle)
    }

    /// Runs SQL statements that return no rows.
    func execute(_ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        guard sqlite3_exec(handle, sql, nil, nil, &message) == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? lastError
            sqlite3_free(message)
            throw SQLiteError(description: text)
        }
    }

    func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        var statement: OpaquePointer?
        guard sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
            let statement
        else { throw SQLiteError(description: "\(lastError) in: \(sql)") }
        return Statement(statement, database: self)
    }

    fileprivate var lastError: String { String(cString: sqlite3_errmsg(handle)) }

    /// A transaction is open (SQLite is not in autocommit mode).
    var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// A prepared statement: bind, step, read columns, reset.
    final class Statement {
        private let pointer: OpaquePointer
        private let database: SQLiteDatabase

        fileprivate init(_ pointer: OpaquePointer, database: SQLiteDatabase) {
            self.pointer = pointer
            self.database = database
        }

        deinit {
            sqlite3_finalize(pointer)
        }

        func bind(_ index: Int32, _ text: String) {
            var text = text
            text.withUTF8 { bytes in
                bytes.withMemoryRebound(to: CChar.self) {
                    _ = csqlite_bind_text(pointer, index, $0.baseAddress, Int32($0.count))
                }
            }
        }

        func bind(_ index: Int32, _ bytes: [UInt8]) {
            bytes.withUnsafeBytes { _ = csqlite_bind_blob(pointer, index, $0.baseAddress, Int32($0.count)) }
        }

        func bind(_ index: Int32, _ value: Int) {
            sqlite3_bind_int64(pointer, index, Int64(value))
        }

        /// Steps once: true while it yields a row, false when done.
        func step() throws(SQLiteError) -> Bool {
            switch sqlite3_step(pointer) {
            case SQLITE_ROW: return true
            case SQLITE_DONE: return false
            default: throw SQLiteError(description: database.lastError)
            }
        }

        /// Steps a statement that yields no rows, then resets it for the next use; the failure, if any.
        func runReportingFailure() -> SQLiteError? {
            let status = sqlite3_step(pointer)
            let failure =
                status == SQLITE_DONE || status == SQLITE_ROW ? nil : SQLiteError(description: database.lastError)
            reset()
            return failure
        }

        func reset() {
            sqlite3_reset(pointer)
            sqlite3_clear_bindings(pointer)
        }

        func text(_ column: Int32) -> String {
            sqlite3_column_text(pointer, column).map { String(cString: $0) } ?? ""
        }

        func int(_ column: Int32) -> Int { Int(sqlite3_column_int64(pointer, column)) }

        func bytes(_ column: Int32) -> [UInt8] {
            let count = Int(sqlite3_column_bytes(pointer, column))
            guard count > 0, let base = sqlite3_column_blob(pointer, column) else { return [] }
            return Array(UnsafeRawBufferPointer(start: base, count: count))
        }
    }
}
