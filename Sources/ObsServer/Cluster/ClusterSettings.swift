/// How a node joins a cluster (`--cluster`, `--node-id`).
struct ClusterSettings: Sendable {
    /// libpq's URL or key=value string (several hosts and `target_session_attrs=read-write` allowed).
    var url: String
    var nodeID: String
    /// How often the keeper looks for nodes that are gone, and candidates try to become keeper.
    var keeperInterval: Duration = .seconds(1)
    /// The tailer's fallback read when no notification comes (a lost NOTIFY never stalls a node).
    var pollInterval: Duration = .seconds(5)
    /// The most commands one append transaction carries.
    var batchLimit = 256
    /// How long a starting node waits for an earlier process with its id to let go of its lock.
    var registerWait: Duration = .seconds(15)
    /// The keeper writes a checkpoint at every log position that is a multiple of this.
    var checkpointEvery = 10_000
    /// How long a write waits for its outcome (`--commit-timeout`): past it, one not yet sent
    /// is dropped and answered 503 (it never reaches the log), one sent is answered 504
    /// (`outcomeUnknown`). Also the appender's `statement_timeout` and `lock_timeout`.
    var commitTimeout: Duration = .seconds(5)
    /// The tailer's and the presence thread's `statement_timeout` and `lock_timeout` (they
    /// read the log and checkpoints, which may be large; no client waits on them).
    var queryTimeout: Duration = .seconds(30)
}
