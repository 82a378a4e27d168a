private import CLibPQ
import Glibc

/// A PostgreSQL failure: its message, and whether the connection is gone.
struct PGError: Error, CustomStringConvertible {
    let description: String
    /// The connection is unusable (lost, or never made): open a new one.
    var connectionLost: Bool
}

/// One PostgreSQL connection through libpq, and the only Swift type that sees libpq.
///
/// Blocking calls on the caller's thread (the cluster's own threads; never an HTTP worker).
/// Text parameters and text results: commands and checkpoint documents are JSON, so rows
/// come back as strings. TCP keep-alives and `tcp_user_timeout` are on, so a vanished
/// database host is noticed in seconds rather than at the operating system's default.
///
/// Not thread-safe: each connection belongs to one thread (the cluster's appender, tailer or presence
/// thread, or `ClusterNode.start` before it hands the presence connection over).
final class PGConnection {
    private let handle: OpaquePointer
    /// The server process serving this connection (`pg_terminate_backend` takes it).
    let backendPID: Int32

    /// Connects to `url` (a `postgres://` URL or a `key=value` string; its settings win over
    /// these defaults), naming the connection `name` in `pg_stat_activity`.
    init(url: String, name: String, connectTimeout: Int = 5) throws(PGError) {
        let settings: [(String, String)] = [
            ("connect_timeout", "\(connectTimeout)"), ("keepalives", "1"), ("keepalives_idle", "5"),
            ("keepalives_interval", "2"), ("keepalives_count", "3"), ("tcp_user_timeout", "10000"),
            ("application_name", name), ("dbname", url),
        ]
        let connection = Self.withCStrings(settings.map(\.0)) { keywords in
            Self.withCStrings(settings.map(\.1)) { values in PQconnectdbParams(keywords, values, 1) }
        }
        guard let connection else {
            throw PGError(description: "cannot connect: out of memory", connectionLost: true)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingSpace
            PQfinish(connection)
            throw PGError(description: "cannot connect to PostgreSQL: \(message)", connectionLost: true)
        }
        handle = connection
        backendPID = PQbackendPID(connection)
        PQsetNoticeProcessor(connection, { _, _ in }, nil)  // NOTICEs ("already exists, skipping") are not errors
    }

    deinit {
        PQfinish(handle)
    }

    /// Runs one statement with text parameters ($1, $2, … ; nil is NULL) and returns its rows
    /// as text (nil for NULL). Several statements without parameters may go in one call.
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(PGError) -> [[String?]] {
        let result: OpaquePointer?
        if parameters.isEmpty {
            result = PQexec(handle, sql)
        } else {
            result = Self.withOptionalCStrings(parameters) { values in
                PQexecParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
            }
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK else { throw failure(result) }
        let rows = Int(PQntuples(result))
        let columns = Int(PQnfields(result))
        var table: [[String?]] = []
        table.reserveCapacity(rows)
        for row in 0..<Int32(rows) {
            var values: [String?] = []
            values.reserveCapacity(columns)
            for column in 0..<Int32(columns) {
                values.append(
                    PQgetisnull(result, row, column) == 1 ? nil : String(cString: PQgetvalue(result, row, column)))
            }
            table.append(values)
        }
        return table
    }

    /// The first column of the first row, as an integer (nil when there is no row or it is NULL).
    func integer(_ sql: String, _ parameters: [String?] = []) throws(PGError) -> Int? {
        guard let row = try query(sql, parameters).first, let text = row.first ?? nil else { return nil }
        return Int(text)
    }

    /// Waits until the server sends something (a notification, after `LISTEN`) or `wake` is
    /// readable or `timeout` passes; consumes the input and discards notifications (they are
    /// only wake-ups). Returns whether a notification arrived. No busy loop: one `poll`.
    func waitForNotification(orWake wake: Int32, timeout: Duration) throws(PGError) -> Bool {
        if try drainNotifications() { return true }
        let socket = PQsocket(handle)
        guard socket >= 0 else {
            throw PGError(description: "PostgreSQL connection has no socket", connectionLost: true)
        }
        var fds = [
            pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        let (seconds, attoseconds) = timeout.components
        let milliseconds = Int32(clamping: max(0, seconds * 1000 + attoseconds / 1_000_000_000_000_000))
        _ = poll(&fds, nfds_t(wake >= 0 ? 2 : 1), milliseconds)
        guard fds[0].revents != 0 else { return false }
        guard PQconsumeInput(handle) == 1 else { throw failure(nil) }
        return try drainNotifications()
    }

    private func drainNotifications() throws(PGError) -> Bool {
        var any = false
        while let notification = PQnotifies(handle) {
            PQfreemem(notification)
            any = true
        }
        return any
    }

    /// A PostgreSQL text[] literal.
    static func arrayLiteral(_ items: [String]) -> String {
        var literal = "{"
        for (index, item) in items.enumerated() {
            if index > 0 { literal += "," }
            literal += "\""
            for character in item.unicodeScalars {
                if character == "\"" || character == "\\" { literal.unicodeScalars.append("\\") }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return literal + "}"
    }

    /// A PostgreSQL bigint[] literal.
    static func arrayLiteral(_ items: [Int]) -> String {
        "{" + items.map { "\($0)" }.joined(separator: ",") + "}"
    }

    private func failure(_ result: OpaquePointer?) -> PGError {
        let lost = PQstatus(handle) != CONNECTION_OK
        var message = result.map { String(cString: PQresultErrorMessage($0)) } ?? ""
        if message.isEmpty { message = String(cString: PQerrorMessage(handle)) }
        return PGError(description: message.trimmingTrailingSpace, connectionLost: lost)
    }

    private static func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { UnsafePointer($0) } + [nil]
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }

    private static func withOptionalCStrings<R>(
        _ strings: [String?], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R
    ) -> R {
        let copies = strings.map { $0.map { strdup($0) } ?? nil }
        defer { copies.forEach { free($0) } }
        let pointers = copies.map { $0.map { UnsafePointer($0) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}

extension String {
    fileprivate var trimmingTrailingSpace: String {
        var text = self
        while text.last?.isWhitespace == true { text.removeLast() }
        return text
    }
}
