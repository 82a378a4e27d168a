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
/// Blocking calls on the caller's thread (the cluster's own threads; never an HTTP worker),
/// each with a deadline: the server ends a statement after `timeout` (`statement_timeout`,
/// and `lock_timeout` for its lock waits, set when it connects), and the client waits at most
/// `timeout + replySlack` for the answer (a stopped server ends nothing), then gives the
/// connection up (`connectionLost`: whether a statement sent took effect is not known).
/// Text parameters and text results: commands and checkpoint documents are JSON, so rows
/// come back as strings. TCP keep-alives and `tcp_user_timeout` are on, so a vanished
/// database host is noticed in seconds rather than at the operating system's default.
///
/// Not thread-safe: each connection belongs to one thread (the cluster's appender, tailer or presence
/// thread, or `ClusterNode.start` before it hands the presence connection over).
final class PGConnection {
    /// How much longer than `timeout` the client waits for an answer: the server's own
    /// timeout error (the statement did not take effect) comes first when the server runs.
    static let replySlack = Duration.seconds(1)

    private let handle: OpaquePointer
    /// The server process serving this connection (`pg_terminate_backend` takes it).
    let backendPID: Int32
    /// The longest a statement runs, or waits for a lock, in the server.
    let timeout: Duration
    /// A wait ran out: the connection is out of step with the server and takes no more statements.
    private var gaveUp = false

    /// Connects to `url` (a `postgres://` URL or a `key=value` string; its settings win over
    /// these defaults), naming the connection `name` in `pg_stat_activity`; its statements
    /// run at most `timeout`.
    init(url: String, name: String, timeout: Duration, connectTimeout: Int = 5) throws(PGError) {
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
        guard PQstatus(connection) == CONNECTION_OK, PQsetnonblocking(connection, 1) == 0 else {
            let message = String(cString: PQerrorMessage(connection)).trimmingTrailingSpace
            PQfinish(connection)
            throw PGError(description: "cannot connect to PostgreSQL: \(message)", connectionLost: true)
        }
        handle = connection
        backendPID = PQbackendPID(connection)
        self.timeout = timeout
        PQsetNoticeProcessor(connection, { _, _ in }, nil)  // NOTICEs ("already exists, skipping") are not errors
        let milliseconds = max(1, timeout.wholeMilliseconds)
        try query("SET statement_timeout = \(milliseconds); SET lock_timeout = \(milliseconds)")
    }

    deinit {
        PQfinish(handle)
    }

    /// Runs one statement with text parameters ($1, $2, … ; nil is NULL) and returns its rows
    /// as text (nil for NULL). Several statements without parameters may go in one call (the
    /// rows are the last one's; the first error is thrown).
    @discardableResult
    func query(_ sql: String, _ parameters: [String?] = []) throws(PGError) -> [[String?]] {
        guard !gaveUp else { throw PGError(description: "the connection was given up", connectionLost: true) }
        let deadline = ContinuousClock.now + timeout + Self.replySlack
        let sent: Int32
        if parameters.isEmpty {
            sent = PQsendQuery(handle, sql)
        } else {
            sent = Self.withOptionalCStrings(parameters) { values in
                PQsendQueryParams(handle, sql, Int32(parameters.count), nil, values, nil, nil, 0)
            }
        }
        guard sent == 1 else { throw giveUp(failure(nil)) }
        try flush(until: deadline)
        var rows: [[String?]] = []
        var refusal: PGError?
        while true {
            try waitForResult(until: deadline)
            guard let result = PQgetResult(handle) else { break }
            let status = PQresultStatus(result)
            if status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK {
                rows = Self.rows(of: result)
            } else if refusal == nil {
                refusal = failure(result)
            }
            PQclear(result)
        }
        if let refusal { throw refusal }
        return rows
    }

    private static func rows(of result: OpaquePointer) -> [[String?]] {
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

    // MARK: - Waiting with a deadline

    /// Sends what libpq still buffers (the socket may be full while the server is stopped).
    private func flush(until deadline: ContinuousClock.Instant) throws(PGError) {
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { return }
            guard flushed > 0 else { throw giveUp(failure(nil)) }
            let events = try waitForSocket(Int16(POLLOUT | POLLIN), until: deadline)
            if events & Int16(POLLIN) != 0, PQconsumeInput(handle) != 1 { throw giveUp(failure(nil)) }
        }
    }

    /// Reads until the next result is complete (or there is none).
    private func waitForResult(until deadline: ContinuousClock.Instant) throws(PGError) {
        while PQisBusy(handle) == 1 {
            _ = try waitForSocket(Int16(POLLIN), until: deadline)
            guard PQconsumeInput(handle) == 1 else { throw giveUp(failure(nil)) }
        }
    }

    /// Waits until the socket has `events`, at most until `deadline`; returns what it has.
    private func waitForSocket(_ events: Int16, until deadline: ContinuousClock.Instant) throws(PGError) -> Int16 {
        let socket = PQsocket(handle)
        guard socket >= 0 else {
            throw giveUp(PGError(description: "PostgreSQL connection has no socket", connectionLost: true))
        }
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else {
                throw giveUp(
                    PGError(
                        description: "PostgreSQL did not answer within \((timeout + Self.replySlack).inSeconds) s",
                        connectionLost: true))
            }
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, Int32(clamping: left.wholeMilliseconds + 1))
            if ready > 0 { return descriptor.revents }
            if ready < 0, errno != EINTR {
                throw giveUp(PGError(description: "poll failed (errno \(errno))", connectionLost: true))
            }
        }
    }

    /// The connection cannot be used any more (the caller drops it: its server process may still run).
    private func giveUp(_ error: PGError) -> PGError {
        gaveUp = true
        return PGError(description: error.description, connectionLost: true)
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
        _ = poll(&fds, nfds_t(wake >= 0 ? 2 : 1), Int32(clamping: max(0, timeout.wholeMilliseconds)))
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

extension Duration {
    /// Whole milliseconds (rounded down), for `poll` and PostgreSQL's settings.
    fileprivate var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}

extension String {
    fileprivate var trimmingTrailingSpace: String {
        var text = self
        while text.last?.isWhitespace == true { text.removeLast() }
        return text
    }
}
