private import CLinux
import Foundation
import Glibc
import Logging
import ObservationCore
import Synchronization

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
    /// How long a command may wait in this node's queue for the database (`--commit-timeout`):
    /// past it, one not yet sent is dropped and answered 503 (it never reaches the log).
    var commitTimeout: Duration = .seconds(5)
}

/// A cluster node: this process's replica of the service, fed by the cluster's shared command
/// log in PostgreSQL (see docs/CLUSTER.md).
///
/// Three threads, each with its own connection:
/// - the **appender** appends the commands this node's clients issue, in batches, in one
///   transaction each that locks the log's head row (positions are commit order, no holes);
/// - the **tailer** reads the log in order (`LISTEN` wakes it; a slow poll is the fallback) and
///   applies every command, this node's own included, to the local `Store`: a client's answer
///   is the outcome of applying its command, so every node decides every request the same way,
///   and nothing is applied (or streamed) that is not durable in PostgreSQL;
/// - the **presence** thread holds the node's liveness lock (an advisory lock on its own
///   connection) and, if it holds the keeper lock, reports nodes whose liveness lock is free
///   (`nodeDown`). Lease expiry and queued postings are the keeper's too (`ServiceTimer`).
///
/// A read first waits until the node has applied everything committed when it arrived (the
/// tailer's next complete read), so a read on any node sees every write answered before it.
/// A node that loses its liveness connection closes its streams at once (the keeper will
/// report it down) and refuses writes and streams with 503 until it has registered again.
final class ClusterNode: Sendable {
    /// Where an answer goes once the command is applied.
    typealias Resolve = @Sendable (Result<Outcome, CoreError>) -> Void

    private struct Waiter: Sendable {
        let resolve: Resolve
    }

    private struct Callback: Sendable {
        let run: @Sendable () -> Void
    }

    private struct State {
        var nextOrigin = 1
        /// Encoded commands waiting for the appender, with their origins.
        var queue: [(origin: Int, command: String)] = []
        /// Answers waiting for their command to come back from the log.
        var waiters: [Int: Waiter] = [:]
        /// Reads waiting for the tailer's next complete read.
        var barriers: [Callback] = []
        /// This incarnation's name in stream commands and log rows; nil while not registered.
        var tag: String? {
            didSet { if let tag { ownTags.insert(tag) } }
        }
        /// Every incarnation of this process: its log rows answer its waiters (an append made
        /// before it registered again is applied after).
        var ownTags: Set<String> = []
        var tailerConnected = false
        /// The first complete read of the log is done (the replica has caught up once).
        var caughtUp = false
        var keeper = false
        var stopping = false
        /// Live nodes (as the presence thread last counted) and the log's head (as last read).
        var nodes = 0
        var head = 0
        /// Applying failed (a command this node cannot read): it stops applying and reports unhealthy.
        var broken: String?
        var lastApplied = ContinuousClock.now
        /// The keeper's copy of the state at a checkpoint position, for the presence thread to write.
        /// (The latest two: under load the newest is often not confirmed yet when the older is.)
        var pendingCheckpoints: [JournalBatch.Checkpoint] = []
        /// The position of the last checkpoint this node wrote or loaded (the log behind it may go).
        var checkpointed = 0
        /// The digest of everything applied, as of `digestPosition` (the tailer's).
        var digest = ApplyDigest()
        var digestPosition = 0
        /// Samples of the digest, published and judged by the presence thread.
        var divergence = DivergenceCheck()
        /// The node was outvoted: the tailer rebuilds the replica from the checkpoint and the log.
        var rebuild: Divergence?
        var rebuilds = 0
        /// When the recent rebuilds happened: a node that keeps diverging stops (`halt`).
        var recentRebuilds: [ContinuousClock.Instant] = []
    }

    let settings: ClusterSettings
    private let store: Store
    private let logger: Logger
    private let state = Locked(State())
    private let applied = Atomic<Int>(0)
    private let appendSignal = DispatchSemaphore(value: 0)
    private let presenceSignal = NSCondition()
    /// Written to wake the tailer (a commit of this node's, a read barrier, shutdown).
    private let tailerWake: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let hooks = Locked(Hooks())
    private let config: String

    /// What the server does when the node's standing changes.
    struct Hooks: Sendable {
        /// The node lost its registration (or stopped applying): its streams must close.
        var cutOff: @Sendable () -> Void = {}
        /// The node became the keeper: the timer looks at leases and queues again.
        var keeper: @Sendable () -> Void = {}
    }

    init(settings: ClusterSettings, store: Store, limits: StoreLimits, logger: Logger) {
        self.settings = settings
        self.store = store
        self.logger = logger
        self.config = ClusterSchema.config(limits)
        tailerWake = clinux_eventfd()
    }

    deinit {
        close(tailerWake)
    }

    // MARK: - Starting and stopping

    /// Sets what happens when the node is cut off or becomes the keeper (before `start`).
    func on(_ hooks: Hooks) {
        self.hooks.withLock { $0 = hooks }
    }

    private func onCutOff() { hooks.withLock { $0.cutOff }() }
    private func onKeeper() { hooks.withLock { $0.keeper }() }

    /// Connects, creates or checks the schema, registers, and applies the whole log; returns
    /// once the replica has caught up (or throws why the node cannot join).
    func start() throws {
        let connection = try PGConnection(url: settings.url, name: "obs \(settings.nodeID) presence")
        try ClusterSchema.prepare(connection, config: config)
        let registration = try ClusterSchema.register(settings.nodeID, on: connection, wait: settings.registerWait)
        state.withLock { $0.tag = registration.tag(settings.nodeID) }
        if let image = try ClusterCheckpoint.load(on: connection) {
            try load(image)
            logger.info("cluster node \(settings.nodeID): loaded the checkpoint at log position \(image.checkpoint)")
        }
        let tailer = Thread { [self] in runTailer() }
        tailer.name = "obs-tailer"
        tailer.start()
        let appender = Thread { [self] in runAppender() }
        appender.name = "obs-appender"
        appender.start()
        if let previous = registration.previousDown { reportDown(settings.nodeID, previous, on: connection) }
        let handOver = PresenceConnection(connection: connection)
        let presence = Thread { [self] in runPresence(connection: handOver) }
        presence.name = "obs-presence"
        presence.start()
        let deadline = ContinuousClock.now + .seconds(600)
        while !state.withLock({ $0.caughtUp || $0.broken != nil }), ContinuousClock.now < deadline {
            sleepThread(.milliseconds(5))  // start-up only
        }
        if let broken = state.withLock({ $0.broken }) { throw ConfigError("cannot apply the cluster's log: \(broken)") }
        logger.notice(
            "cluster node \(settings.nodeID) joined as \(tag ?? "?"): applied the log up to \(applied.load(ordering: .acquiring))"
        )
    }

    /// Stops the threads; answers still waiting for the log are closed unanswered (their outcome
    /// is not known here; the log has it).
    func stop() {
        let waiters = state.withLock { state -> [Waiter] in
            state.stopping = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        appendSignal.signal()
        wakeTailer()
        wakePresence()
        for _ in 0..<3 { _ = finished.wait(timeout: .now() + 5) }
        let unknown = CoreError(
            .unavailable,
            "the node stopped before its change came back from the cluster's log; it may have taken effect",
            details: ["retryAfter": 1])
        for waiter in waiters { waiter.resolve(.failure(unknown)) }
    }

    // MARK: - What the server asks

    /// This incarnation's name for stream commands; nil while the node is not registered.
    var tag: String? { state.withLock { $0.tag } }

    /// Ready to serve: caught up, registered, reading the log, applying it.
    var isHealthy: Bool {
        state.withLock { $0.caughtUp && $0.tag != nil && $0.tailerConnected && $0.broken == nil }
    }

    var isKeeper: Bool { state.withLock { $0.keeper && $0.tag != nil } }

    /// When the node last applied a command (quiet for `idle` postings counts from it).
    var lastApplied: ContinuousClock.Instant { state.withLock { $0.lastApplied } }

    /// What `/v1/stats` shows of the node (its `cluster` member).
    struct Figures: Sendable {
        let node: String
        let nodes: Int
        let applied: Int
        let head: Int
        /// The digest of what the node applied, as of `digestPosition`.
        let digest: String
        let digestPosition: Int
        /// How often the node found its replica outvoted and rebuilt it.
        let rebuilds: Int
    }

    var figures: Figures {
        let applied = applied.load(ordering: .acquiring)
        return state.withLock {
            Figures(
                node: settings.nodeID, nodes: $0.nodes, applied: applied, head: max($0.head, applied),
                digest: $0.digest.hex, digestPosition: $0.digestPosition, rebuilds: $0.rebuilds)
        }
    }

    /// Appends `command` to the log; `resolve` gets its outcome once this node has applied it
    /// (on the tailer's thread: do nothing slow there), or 503 when the node cannot append now.
    func submit(_ command: Command, resolve: @escaping Resolve) {
        let encoded = String(decoding: command.encoded(), as: UTF8.self)
        let queued = state.withLock { state -> Result<Int, CoreError> in
            guard !state.stopping else { return .failure(Self.unavailable("the node is stopping")) }
            guard state.tag != nil, state.broken == nil else {
                return .failure(Self.unavailable("the node has lost the cluster's database and is joining again"))
            }
            let origin = state.nextOrigin
            state.nextOrigin += 1
            state.waiters[origin] = Waiter(resolve: resolve)
            state.queue.append((origin, encoded))
            return .success(origin)
        }
        switch queued {
        case .failure(let refusal):
            resolve(.failure(refusal))
        case .success(let origin):
            appendSignal.signal()
            DispatchQueue.global().asyncAfter(deadline: .now() + settings.commitTimeout.inSeconds) { [weak self] in
                self?.dropIfQueued(origin)
            }
        }
    }

    /// A command still queued at its deadline (the database cannot take it) never will be: it
    /// leaves the queue, and its answer is 503. One the appender took is decided in the database.
    private func dropIfQueued(_ origin: Int) {
        let waiter = state.withLock { state -> Waiter? in
            guard let index = state.queue.firstIndex(where: { $0.origin == origin }) else { return nil }
            state.queue.remove(at: index)
            return state.waiters.removeValue(forKey: origin)
        }
        waiter?.resolve(
            .failure(Self.unavailable("the cluster's database did not take the change within --commit-timeout")))
    }

    /// Submits and waits for the outcome (the timer's and the presence thread's own commands),
    /// at most the commit timeout: a command whose outcome is not known by then may still apply
    /// later (theirs are conditional, so applying one twice or late changes nothing twice).
    func submitAndWait(_ command: Command) -> Result<Outcome, CoreError> {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Result<Outcome, CoreError>?>(nil)
        submit(command) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        }
        _ = done.wait(timeout: .now() + settings.commitTimeout.inSeconds)
        return result.withLock { $0 } ?? .failure(Self.unavailable("no outcome within --commit-timeout"))
    }

    /// Runs `body` once this node has applied everything committed now (at once, from the local
    /// replica, while the node cannot read the log: a stale read beats none).
    func afterCatchingUp(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            guard state.tailerConnected, state.broken == nil, !state.stopping else { return true }
            state.barriers.append(Callback(run: body))
            return false
        }
        if now { body() } else { wakeTailer() }
    }

    static func unavailable(_ reason: String) -> CoreError {
        CoreError(.unavailable, "\(reason); nothing was changed", details: ["retryAfter": 1])
    }

    // MARK: - Appender

    private func runAppender() {
        var connection: PGConnection?
        var backoff = ClusterBackoff()
        while true {
            // Woken by a submit or by stop; the timeout only bounds the wait.
            _ = appendSignal.wait(timeout: .now() + 1)
            let (batch, stopping, tag) = state.withLock { state in
                let count = min(state.queue.count, settings.batchLimit)
                defer { state.queue.removeFirst(count) }
                return (Array(state.queue.prefix(count)), state.stopping, state.tag)
            }
            if stopping { break }
            guard !batch.isEmpty else { continue }
            if batch.count == settings.batchLimit { appendSignal.signal() }  // more is queued
            do {
                if connection == nil {
                    connection = try PGConnection(url: settings.url, name: "obs \(settings.nodeID) appender")
                }
                guard let connection, let tag else {
                    throw PGError(description: "not registered", connectionLost: false)
                }
                try append(batch, as: tag, on: connection)
                backoff.reset()
                wakeTailer()
            } catch {
                let lostPID = connection?.backendPID
                connection = nil
                logger.warning("cluster append failed: \(error)")
                if let lostPID, let tag {
                    resolveInDoubt(batch, as: tag, lostBackend: lostPID)
                } else {
                    fail(batch.map(\.origin), "the cluster's database cannot be reached")
                }
                backoff.sleep()
            }
        }
        finished.signal()
    }

    /// One transaction: lock the head row, take the next positions, insert, notify.
    private func append(_ batch: [(origin: Int, command: String)], as tag: String, on connection: PGConnection)
        throws(PGError)
    {
        try connection.query(
            ClusterSQL.append,
            [
                "\(batch.count)", tag, PGConnection.arrayLiteral(batch.map(\.origin)),
                PGConnection.arrayLiteral(batch.map(\.command)),
            ])
    }

    /// The connection broke during an append: whether it committed is unknown. Once the old
    /// server process is gone (so it cannot commit later), the commands found in the log are
    /// left to the tailer (their answers come from applying them); the others never happened,
    /// and go back to the front of the queue (their origins are unique: a retry cannot apply
    /// twice). Only a node that cannot reach the database answers 503.
    private func resolveInDoubt(_ batch: [(origin: Int, command: String)], as tag: String, lostBackend: Int32) {
        var backoff = ClusterBackoff()
        while !state.withLock({ $0.stopping }) {
            do {
                let connection = try PGConnection(url: settings.url, name: "obs \(settings.nodeID) appender")
                try connection.query(ClusterSQL.terminateBackend, ["\(lostBackend)"])
                while try connection.integer(ClusterSQL.backendCount, ["\(lostBackend)"]) ?? 0 > 0 {
                    sleepThread(.milliseconds(10))
                }
                let origins = PGConnection.arrayLiteral(batch.map(\.origin))
                let found = Set(
                    try connection.query(ClusterSQL.appendedOrigins, [tag, origins]).compactMap {
                        $0[0].flatMap { Int($0) }
                    })
                let retry = batch.filter { !found.contains($0.origin) }
                state.withLock { $0.queue.insert(contentsOf: retry, at: 0) }
                if !retry.isEmpty { appendSignal.signal() }
                if !found.isEmpty { wakeTailer() }
                return
            } catch {
                backoff.sleep()
            }
        }
    }

    private func fail(_ origins: [Int], _ reason: String) {
        let waiters = state.withLock { state in origins.compactMap { state.waiters.removeValue(forKey: $0) } }
        for waiter in waiters { waiter.resolve(.failure(Self.unavailable(reason))) }
    }

    // MARK: - Tailer

    private func runTailer() {
        var connection: PGConnection?
        var backoff = ClusterBackoff()
        while !state.withLock({ $0.stopping || $0.broken != nil }) {
            do {
                if connection == nil {
                    let opened = try PGConnection(url: settings.url, name: "obs \(settings.nodeID) tailer")
                    try opened.query(ClusterSQL.listen)
                    connection = opened
                    state.withLock { $0.tailerConnected = true }
                }
                guard let connection else { continue }
                if let divergence = state.withLock({ $0.rebuild }) { try rebuild(after: divergence, on: connection) }
                let barriers = state.withLock { state in
                    defer { state.barriers = [] }
                    return state.barriers
                }
                try readToEnd(connection)
                state.withLock { $0.caughtUp = true }
                for barrier in barriers { barrier.run() }
                backoff.reset()
                if state.withLock({ !$0.barriers.isEmpty }) { continue }
                _ = try connection.waitForNotification(orWake: tailerWake, timeout: settings.pollInterval)
                drainWake()
            } catch {
                connection = nil
                let barriers = state.withLock { state in
                    state.tailerConnected = false
                    defer { state.barriers = [] }
                    return state.barriers
                }
                for barrier in barriers { barrier.run() }  // stale reads rather than none
                logger.warning("cluster log reader: \(error); reconnecting")
                backoff.sleep()
            }
        }
        finished.signal()
    }

    /// Applies every command after `applied` that is committed now.
    private func readToEnd(_ connection: PGConnection) throws(PGError) {
        let page = 512
        var digest = state.withLock { $0.digest }
        while true {
            let after = applied.load(ordering: .acquiring)
            let rows = try connection.query(ClusterSQL.readLog, ["\(after)", "\(page)"])
            for row in rows {
                guard let seq = row[0].flatMap({ Int($0) }), let node = row[1],
                    let origin = row[2].flatMap({ Int($0) }),
                    let text = row[3]
                else { continue }
                guard seq == applied.load(ordering: .acquiring) + 1 else {
                    return halt("the log jumps from \(applied.load(ordering: .acquiring)) to \(seq)")
                }
                let command: Command
                do {
                    command = try Command(decoding: Array(text.utf8))
                } catch {
                    return halt("command \(seq) cannot be read: \(error)")
                }
                let result = Result { () throws(CoreError) in
                    try store.execute(command) { effects in digest.add(effects) }
                }
                applied.store(seq, ordering: .releasing)
                // The keeper's checkpoints are the state right after a multiple of `checkpointEvery`.
                var snapshot =
                    seq % settings.checkpointEvery == 0 && isKeeper ? store.fullCheckpoint(position: seq) : nil
                snapshot?.counters["digest"] = .string(digest.hex)
                let waiter = state.withLock { state in
                    state.lastApplied = .now
                    state.head = max(state.head, seq)
                    state.digest = digest
                    state.digestPosition = seq
                    if state.rebuild == nil, seq % DivergenceCheck.every == 0 || seq % settings.checkpointEvery == 0 {
                        state.divergence.sample(seq, digest)
                    }
                    if let snapshot { state.pendingCheckpoints = state.pendingCheckpoints.suffix(1) + [snapshot] }
                    return state.ownTags.contains(node) ? state.waiters.removeValue(forKey: origin) : nil
                }
                waiter?.resolve(result)
                if snapshot != nil { wakePresence() }
            }
            if rows.count < page { return }
        }
    }

    /// Replaces the replica with the checkpoint's state (or an empty one), whose digest it takes.
    private func load(_ image: PersistedImage?) throws {
        let digest: ApplyDigest
        if let image {
            guard case .string(let hex)? = image.counters["digest"], let read = ApplyDigest(hex: hex) else {
                throw ConfigError("the cluster's checkpoint at \(image.checkpoint) has no digest")
            }
            digest = read
        } else {
            digest = ApplyDigest()
        }
        try store.load(image)
        let position = image?.checkpoint ?? 0
        applied.store(position, ordering: .releasing)
        state.withLock { state in
            state.checkpointed = max(state.checkpointed, position)
            state.digest = digest
            state.digestPosition = position
        }
    }

    /// More rebuilds than this within `rebuildWindow`: the node stops applying (a divergence that
    /// replays the same way is a bug to report, not to loop on).
    static let rebuildLimit = 3
    static let rebuildWindow = Duration.seconds(600)

    /// The node's replica was outvoted: it stops serving (its streams close: their clients
    /// resume elsewhere or here later), starts again from the checkpoint and applies the log.
    private func rebuild(after divergence: Divergence, on connection: PGConnection) throws {
        logger.critical("cluster node \(settings.nodeID) diverged \(divergence): rebuilding its replica")
        let now = ContinuousClock.now
        let again = state.withLock { state in
            state.caughtUp = false
            state.pendingCheckpoints = []
            state.recentRebuilds = state.recentRebuilds.filter { now - $0 < Self.rebuildWindow } + [now]
            return state.recentRebuilds.count
        }
        onCutOff()
        guard again <= Self.rebuildLimit else {
            return halt("it diverged \(again) times in \(Self.rebuildWindow), rebuilding did not help")
        }
        // What it has applied drops to 0 first, so the keeper keeps the log after the checkpoint.
        applied.store(0, ordering: .releasing)
        try connection.query(ClusterSQL.publishApplied, [settings.nodeID, "0"])
        let image = try ClusterCheckpoint.load(on: connection)
        try load(image)
        state.withLock { state in
            state.divergence.rebuilt()
            state.rebuild = nil
            state.rebuilds += 1
        }
        logger.notice(
            "cluster node \(settings.nodeID) rebuilds from log position \(image?.checkpoint ?? 0); applying the log")
    }

    /// The replica cannot go on (it would diverge): stop applying, report unhealthy.
    private func halt(_ reason: String) {
        logger.critical("cluster node \(settings.nodeID) stops applying the log: \(reason)")
        state.withLock { $0.broken = reason }
        onCutOff()
    }

    private func wakeTailer() {
        var one: UInt64 = 1
        _ = write(tailerWake, &one, 8)
    }

    private func drainWake() {
        var value: UInt64 = 0
        _ = read(tailerWake, &value, 8)
    }

    // MARK: - Presence and keeper

    private func runPresence(connection initial: PresenceConnection) {
        var connection: PGConnection? = initial.connection
        while !state.withLock({ $0.stopping }) {
            do {
                if connection == nil { connection = try rejoin() }
                guard let connection else { continue }
                let becameKeeper =
                    try state.withLock({ !$0.keeper })
                    ? ClusterSchema.tryLock(ClusterSchema.lockClass, 0, on: connection) : false
                if becameKeeper {
                    state.withLock { $0.keeper = true }
                    logger.notice("cluster node \(settings.nodeID) is the keeper")
                    onKeeper()
                }
                if state.withLock({ $0.keeper }) {
                    try reportNodesDown(on: connection)
                    try checkpoint(on: connection)
                }
                try connection.query(
                    ClusterSQL.publishApplied, [settings.nodeID, "\(applied.load(ordering: .acquiring))"])
                do {
                    try checkDivergence(on: connection)
                } catch let error as PGError where !error.connectionLost {
                    logger.warning("cluster digest check: \(error)")
                }
                let live = try connection.integer(ClusterSQL.liveNodeCount) ?? 0
                let head = try connection.integer(ClusterSQL.head) ?? 0
                state.withLock { state in
                    state.nodes = live
                    state.head = max(state.head, head)
                }
            } catch {
                connection = nil
                let wasRegistered = state.withLock { state -> Bool in
                    defer {
                        state.tag = nil
                        state.keeper = false
                    }
                    return state.tag != nil
                }
                if wasRegistered {
                    logger.error(
                        "cluster node \(settings.nodeID) lost its database connection (\(error)): closing its streams")
                    onCutOff()
                }
            }
            presenceSignal.lock()
            if !state.withLock({ $0.stopping }) {
                _ = presenceSignal.wait(until: Date(timeIntervalSinceNow: settings.keeperInterval.seconds))
            }
            presenceSignal.unlock()
        }
        finished.signal()
    }

    /// The keeper writes the latest pending checkpoint the other nodes' digests confirmed, then
    /// deletes the log no live node needs.
    private func checkpoint(on connection: PGConnection) throws {
        let pending = state.withLock { state in
            state.rebuild != nil
                ? nil
                : state.pendingCheckpoints.last { state.divergence.confirms($0.position, peers: state.nodes - 1) }
        }
        if let pending {
            let started = ContinuousClock.now
            if try ClusterCheckpoint.write(pending, on: connection) {
                let elapsed = ContinuousClock.now - started
                logger.info("cluster checkpoint at log position \(pending.position) written in \(elapsed)")
            }
            state.withLock { state in
                state.pendingCheckpoints.removeAll { $0.position <= pending.position }
                state.checkpointed = max(state.checkpointed, pending.position)
            }
        }
        let through = state.withLock { $0.checkpointed }
        if through > 0 { try ClusterCheckpoint.truncate(through: through, on: connection) }
    }

    /// Publishes this node's digest samples (and its current digest), then judges its pending
    /// samples against the other nodes' reports; outvoted, it has the tailer rebuild.
    private func checkDivergence(on connection: PGConnection) throws {
        let (samples, positions, peers, generation) = state.withLock { state in
            if state.rebuild == nil { state.divergence.sample(state.digestPosition, state.digest) }
            let divergence = state.divergence
            return (divergence.unpublished, divergence.pending.map(\.position), state.nodes - 1, divergence.generation)
        }
        if let last = samples.last {
            try connection.query(
                ClusterSQL.publishDigests,
                [
                    settings.nodeID, PGConnection.arrayLiteral(samples.map(\.position)),
                    PGConnection.arrayLiteral(samples.map(\.digest.hex)),
                ])
            state.withLock { $0.divergence.published(through: last.position, generation: generation) }
        }
        guard peers > 0, !positions.isEmpty else { return }
        var reports: [Int: [String: String]] = [:]
        for row in try connection.query(
            ClusterSQL.peerDigests, [PGConnection.arrayLiteral(positions), settings.nodeID])
        {
            guard let position = row[0].flatMap({ Int($0) }), let node = row[1], let digest = row[2] else { continue }
            reports[position, default: [:]][node] = digest
        }
        let divergence = state.withLock { state -> Divergence? in
            guard state.rebuild == nil,
                let found = state.divergence.judge(reports: reports, peers: peers, generation: generation)
            else {
                return nil
            }
            state.rebuild = found
            return found
        }
        if divergence != nil { wakeTailer() }
    }

    private func wakePresence() {
        presenceSignal.lock()
        presenceSignal.broadcast()
        presenceSignal.unlock()
    }

    /// Registers again after losing the liveness connection: a new incarnation (the old one is
    /// reported down, by this node now or by the keeper), after catching up.
    private func rejoin() throws -> PGConnection {
        let connection = try PGConnection(url: settings.url, name: "obs \(settings.nodeID) presence")
        let registration = try ClusterSchema.register(settings.nodeID, on: connection, wait: settings.registerWait)
        state.withLock { $0.tag = registration.tag(settings.nodeID) }
        if let previous = registration.previousDown { reportDown(settings.nodeID, previous, on: connection) }
        logger.notice("cluster node \(settings.nodeID) joined again as \(registration.tag(settings.nodeID))")
        return connection
    }

    /// The keeper's round: every node whose liveness lock is free is down.
    private func reportNodesDown(on connection: PGConnection) throws {
        let rows = try connection.query(ClusterSQL.otherLiveNodes, [settings.nodeID])
        for row in rows {
            guard let node = row[0], let incarnation = row[1].flatMap({ Int($0) }),
                let key = row[2].flatMap({ Int32($0) })
            else { continue }
            guard try ClusterSchema.tryLock(ClusterSchema.livenessClass, key, on: connection) else { continue }
            try connection.query(ClusterSQL.advisoryUnlock, ["\(ClusterSchema.livenessClass)", "\(key)"])
            logger.notice("cluster node \(node)#\(incarnation) is gone: its streams close")
            reportDown(node, incarnation, on: connection)
        }
    }

    /// Appends `nodeDown` for an incarnation and records that it was reported.
    private func reportDown(_ node: String, _ incarnation: Int, on connection: PGConnection) {
        guard case .success = submitAndWait(Command(time: .now(), .nodeDown(holder: "\(node)#\(incarnation)"))) else {
            return  // the next round tries again
        }
        _ = try? connection.query(ClusterSQL.markReportedDown, [node, "\(incarnation)"])
    }
}

/// The presence thread's first connection, handed over from `start()`.
private struct PresenceConnection: @unchecked Sendable {
    // Unchecked: created by start(), then used by the presence thread only.
    let connection: PGConnection
}

extension Duration {
    fileprivate var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
