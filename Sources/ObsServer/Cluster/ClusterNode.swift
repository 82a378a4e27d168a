import Foundation
import Logging
import ObservationCore

/// A cluster node: this process's replica of the service, fed by the cluster's shared command
/// log in PostgreSQL (see docs/CLUSTER.md). What the server calls; the work is done by three
/// threads, each with its own connection and type, sharing one `ClusterShared`:
/// - `ClusterAppender` appends the commands this node's clients issue, in batches;
/// - `ClusterTailer` reads the log in order and applies every command to the local `Store`
///   (a client's answer is the outcome of applying its command), runs read barriers, rebuilds;
/// - `ClusterPresence` holds the node's liveness lock and, as keeper, reports nodes down,
///   writes checkpoints; every node publishes and judges its digest (`DivergenceCheck`).
///
/// A read first waits until the node has applied everything committed when it arrived (the
/// tailer's next complete read), so a read on any node sees every write answered before it.
///
/// Thread-safety: every member may be called from any thread, `start` and `stop` once each.
/// Nothing here blocks on PostgreSQL except `start`.
final class ClusterNode: Sendable {
    /// Where an answer goes once the command is applied.
    typealias Resolve = @Sendable (Result<Outcome, CoreError>) -> Void

    /// What the server does when the node's standing changes.
    struct Hooks: Sendable {
        /// The node lost its registration (or stopped applying): its streams must close.
        var cutOff: @Sendable () -> Void = {}
        /// The node became the keeper: the timer looks at leases and queues again.
        var keeper: @Sendable () -> Void = {}
    }

    let settings: ClusterSettings
    let shared: ClusterShared
    private let config: String
    private let appender: ClusterAppender
    private let tailer: ClusterTailer
    private let presence: ClusterPresence

    init(settings: ClusterSettings, store: Store, limits: StoreLimits, logger: Logger) {
        self.settings = settings
        shared = ClusterShared(settings: settings, logger: logger)
        config = ClusterSchema.config(limits)
        appender = ClusterAppender(shared: shared)
        tailer = ClusterTailer(shared: shared, store: store)
        presence = ClusterPresence(shared: shared)
    }

    // MARK: - Starting and stopping

    /// Sets what happens when the node is cut off or becomes the keeper (before `start`).
    func on(_ hooks: Hooks) {
        shared.on(hooks)
    }

    /// Connects, creates or checks the schema, registers, and applies the whole log; returns
    /// once the replica has caught up (or throws why the node cannot join).
    func start() throws {
        let logger = shared.logger
        let connection = try PGConnection(
            url: settings.url, name: "obs \(settings.nodeID) presence", timeout: settings.queryTimeout)
        try ClusterSchema.prepare(connection, config: config)
        let registration = try ClusterSchema.register(settings.nodeID, on: connection, wait: settings.registerWait)
        shared.state.withLock { $0.tag = registration.tag(settings.nodeID) }
        if let image = try ClusterCheckpoint.load(on: connection) {
            try tailer.load(image)
            logger.info("cluster node \(settings.nodeID): loaded the checkpoint at log position \(image.checkpoint)")
        }
        tailer.start()
        appender.start()
        if let previous = registration.previousDown { presence.reportDown(settings.nodeID, previous) }
        presence.start(with: connection)
        let deadline = ContinuousClock.now + .seconds(600)
        while !shared.state.withLock({ $0.caughtUp || $0.broken != nil }), ContinuousClock.now < deadline {
            sleepThread(.milliseconds(5))  // start-up only
        }
        if let broken = shared.state.withLock({ $0.broken }) {
            throw ConfigError("cannot apply the cluster's log: \(broken)")
        }
        logger.notice(
            "cluster node \(settings.nodeID) joined as \(tag ?? "?"): applied the log up to \(shared.applied.load(ordering: .acquiring))"
        )
    }

    /// Stops the threads (waiting at most 5 s for each); answers still waiting are told: 503
    /// for a command never sent, 504 for one sent (its outcome is not known here; the log has it).
    func stop() {
        let waiters = shared.state.withLock { $0.stop() }
        shared.wakeAppender()
        shared.wakeTailer()
        shared.wakePresence()
        shared.waitForThreads(3, timeout: .seconds(5))
        let unknown = Self.outcomeUnknown("the node stopped before its change came back from the cluster's log")
        let refused = Self.unavailable("the node stopped before it sent the change to the cluster's database")
        for waiter in waiters { waiter.resolve(.failure(waiter.sent ? unknown : refused)) }
    }

    // MARK: - What the server asks

    /// This incarnation's name for stream commands; nil while the node is not registered.
    var tag: String? { shared.state.withLock { $0.tag } }

    /// Ready to serve: caught up, registered, reading the log, applying it.
    var isHealthy: Bool {
        shared.state.withLock { $0.caughtUp && $0.tag != nil && $0.tailerConnected && $0.broken == nil }
    }

    var isKeeper: Bool { shared.isKeeper }

    /// When the node last applied a command (quiet for `idle` postings counts from it).
    var lastApplied: ContinuousClock.Instant { shared.state.withLock { $0.lastApplied } }

    /// Appends `command` to the log; `resolve` gets its outcome once this node has applied it
    /// (on the tailer's thread: do nothing slow there), always within `settings.commitTimeout`:
    /// else 503 when the node knows it was not applied, 504 when it cannot know
    /// (`ClusterShared.submit`). Never blocks.
    func submit(_ command: Command, resolve: @escaping Resolve) {
        shared.submit(command, resolve: resolve)
    }

    /// Runs `body` once this node has applied everything committed now (at once, from the local
    /// replica, while the node cannot read the log: a stale read beats none).
    /// `body(false)` instead when it has not by `settings.commitTimeout` (the database stopped
    /// answering): one sweep at a time looks for those (`ClusterShared.sweepBarriers`).
    func afterCatchingUp(_ body: @escaping @Sendable (Bool) -> Void) {
        switch shared.state.withLock({ $0.addBarrier(body, at: .now) }) {
        case nil:
            body(true)
        case let sweep?:
            shared.wakeTailer()
            if sweep { shared.scheduleBarrierSweep(after: settings.commitTimeout) }
        }
    }

    static func unavailable(_ reason: String) -> CoreError {
        CoreError(.unavailable, "\(reason); nothing was changed", details: ["retryAfter": 1])
    }

    /// A write that was sent to the cluster's database and whose outcome is not known (section 11).
    static func outcomeUnknown(_ reason: String) -> CoreError {
        CoreError(
            .outcomeUnknown,
            "\(reason); it may or may not have been applied: repeat it with the same Idempotency-Key (or "
                + "transaction id), which is safe: the repeat answers its real outcome and never applies it twice",
            details: ["outcome": "unknown", "repeatSafely": "Idempotency-Key", "retryAfter": 1])
    }
}
