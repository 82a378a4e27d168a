import Foundation
import Logging
import ObservationCore

/// The presence thread: it holds the node's liveness lock (an advisory lock on its own
/// connection, taken at registration) and, each `keeperInterval` (or when woken), runs a round:
/// it tries for the keeper lock; as keeper it reports nodes whose liveness lock is free
/// (`nodeDown`) and writes checkpoints (`ClusterPresence+Keeper.swift`); every node publishes
/// what it has applied and its digest samples, and judges them (`ClusterPresence+Divergence.swift`).
/// Lease expiry and queued postings are the keeper's too, on the server's timer.
///
/// A node that loses this connection closes its streams at once (the keeper will report it
/// down) and refuses writes and streams with 503 until it has registered again.
///
/// Thread-safety: `start` once, with the connection `ClusterNode.start` registered on; then the
/// presence thread alone holds it.
final class ClusterPresence: Sendable {
    let shared: ClusterShared

    init(shared: ClusterShared) {
        self.shared = shared
    }

    func start(with connection: PGConnection) {
        let handOver = PresenceConnection(connection: connection)
        let thread = Thread { [self] in run(connection: handOver) }
        thread.name = "obs-presence"
        thread.start()
    }

    private func run(connection initial: PresenceConnection) {
        var connection: PGConnection? = initial.connection
        // After a failure, the next try (to register again) waits a round, as the rounds do.
        let interval = shared.settings.keeperInterval
        var backoff = ClusterBackoff(first: interval, limit: interval)
        while !shared.isStopping {
            var wait = interval
            do {
                if connection == nil { connection = try rejoin() }
                guard let connection else { continue }
                try round(on: connection)
                backoff.reset()
            } catch {
                connection = nil
                lost(error)
                wait = backoff.delay()
            }
            shared.waitForPresence(wait)
        }
        shared.threadFinished()
    }

    /// One round on the liveness connection.
    private func round(on connection: PGConnection) throws {
        let settings = shared.settings
        let becameKeeper =
            try shared.state.withLock({ !$0.keeper })
            ? ClusterSchema.tryLock(ClusterSchema.lockClass, 0, on: connection) : false
        if becameKeeper {
            shared.state.withLock { $0.keeper = true }
            shared.logger.notice("cluster node \(settings.nodeID) is the keeper")
            shared.becameKeeper()
        }
        try recordReportedDown(on: connection)
        if shared.state.withLock({ $0.keeper }) {
            try reportNodesDown(on: connection)
            try checkpoint(on: connection)
        }
        try connection.query(
            ClusterSQL.publishApplied, [settings.nodeID, "\(shared.applied.load(ordering: .acquiring))"])
        do {
            try checkDivergence(on: connection)
        } catch let error as PGError where !error.connectionLost {
            shared.logger.warning("cluster digest check: \(error)")
        }
        let live = try connection.integer(ClusterSQL.liveNodeCount) ?? 0
        let head = try connection.integer(ClusterSQL.head) ?? 0
        shared.state.withLock { state in
            state.nodes = live
            state.head = max(state.head, head)
        }
    }

    /// The liveness connection is gone: the node is no longer registered (nor the keeper).
    private func lost(_ error: any Error) {
        let wasRegistered = shared.state.withLock { state -> Bool in
            defer {
                state.tag = nil
                state.keeper = false
            }
            return state.tag != nil
        }
        if wasRegistered {
            shared.logger.error(
                "cluster node \(shared.settings.nodeID) lost its database connection (\(error)): closing its streams")
            shared.cutOff()
        }
    }

    /// Registers again after losing the liveness connection: a new incarnation (the old one is
    /// reported down, by this node now or by the keeper), after catching up.
    private func rejoin() throws -> PGConnection {
        let settings = shared.settings
        let connection = try PGConnection(
            url: settings.url, name: "obs \(settings.nodeID) presence", timeout: settings.queryTimeout)
        let registration = try ClusterSchema.register(settings.nodeID, on: connection, wait: settings.registerWait)
        shared.state.withLock { $0.tag = registration.tag(settings.nodeID) }
        if let previous = registration.previousDown { reportDown(settings.nodeID, previous) }
        shared.logger.notice("cluster node \(settings.nodeID) joined again as \(registration.tag(settings.nodeID))")
        return connection
    }
}

/// The presence thread's first connection, handed over from `ClusterNode.start()`.
private struct PresenceConnection: @unchecked Sendable {
    // Unchecked: created by start(), then used by the presence thread only.
    let connection: PGConnection
}
