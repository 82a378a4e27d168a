import ObservationCore

/// Where this server's commands go and what its reads wait for: the one seam between the API
/// and the three ways a server keeps its state.
///
/// | replica | a write is answered | a read waits for |
/// |---|---|---|
/// | `MemoryReplica` | now | nothing |
/// | `DurableReplica` (`--data-dir`) | once its journal position is durable (or 503 once rolled back) | nothing |
/// | `ClusterReplica` (`--cluster`) | once its command came back from the cluster's log and was applied | the node to apply what was committed when it arrived |
///
/// Thread-safety: every method may be called from any worker thread at once.
protocol Replica: Sendable {
    /// The state every read comes from.
    var store: Store { get }

    /// Executes a client's command; `render` makes the answer of its outcome (on a cluster
    /// node, later, on a worker thread). A refusal known at once is thrown.
    func submit(_ command: Command, render: @escaping @Sendable (Outcome) -> HTTPResponse) throws(CoreError) -> Reply

    /// `read`, once this replica has applied everything committed when the request arrived.
    func barrier(_ read: @escaping @Sendable () -> Reply) -> Reply
    /// Whether reads may have to wait (`barrier` is not always at once): a cluster node's.
    var hasReadBarrier: Bool { get }

    /// Opens a stream on an observer's log (nil: the admin log): counted (it holds the observer's
    /// lease, under `--max-streams`) until `close` runs.
    func openStream(of observerID: String?) throws(CoreError) -> (log: EventLog, close: @Sendable () -> Void)

    /// Why the replica cannot serve now (`/healthz` 503), or nil.
    var unavailability: CoreError? { get }
    /// Whether clients' writes are accepted now.
    var isWritable: Bool { get }
    /// The open event streams `/v1/stats` counts (a cluster node: its own).
    var streamCount: Int { get }
    /// What `/v1/stats` adds (a cluster node: its `cluster` member).
    func addFigures(to figures: inout JSONObject)
    /// What `/metrics` adds: (name, type, help, value) each.
    var metrics: [(name: String, type: String, help: String, value: String)] { get }

    /// Starts what the replica runs (its committer, its cluster threads) before the server listens.
    func start() throws
    /// Writes what is left and stops (after the server stopped listening).
    func stop()
}

extension Replica {
    func barrier(_ read: @escaping @Sendable () -> Reply) -> Reply { read() }
    var hasReadBarrier: Bool { false }
    var unavailability: CoreError? { nil }
    var isWritable: Bool { store.isWritable }
    var streamCount: Int { store.stats().streams }
    func addFigures(to figures: inout JSONObject) {}
    var metrics: [(name: String, type: String, help: String, value: String)] { [] }
    func start() throws {}
    func stop() {}

    /// A single server's stream: opened and closed by commands applied here.
    func openStream(of observerID: String?) throws(CoreError) -> (log: EventLog, close: @Sendable () -> Void) {
        let log = try store.openStream(of: observerID)
        return (log, { [store] in store.closeStream(of: observerID) })
    }
}

/// A server in memory: nothing to wait for.
struct MemoryReplica: Replica {
    let store: Store

    func submit(_ command: Command, render: @escaping @Sendable (Outcome) -> HTTPResponse) throws(CoreError) -> Reply {
        .now(render(try store.submit(command).outcome))
    }
}
