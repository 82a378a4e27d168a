/// The cluster's log as the appender uses it: one connection (`PGConnection` for PostgreSQL;
/// a fake in tests), used by one thread at a time.
protocol ClusterAppendLog: AnyObject {
    /// The server process serving this connection (terminated when an append's outcome is in doubt).
    var backendPID: Int32 { get }

    /// Appends `batch` as `tag`'s in one transaction that locks the log's head row (positions
    /// are commit order, with no holes), and notifies the tailers.
    func append(_ batch: [ClusterState.Queued], as tag: String) throws

    /// Asks the database to end the server process `pid` (it returns before the process is gone).
    func terminateBackend(_ pid: Int32) throws

    /// Whether the server process `pid` is still there (and so might still commit).
    func backendExists(_ pid: Int32) throws -> Bool

    /// The origins among `origins` whose command `tag` appended: they are in the log.
    func appendedOrigins(_ origins: [Int], by tag: String) throws -> Set<Int>
}
