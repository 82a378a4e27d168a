import Logging
import ObservationCore

/// Rebuilding a replica the other nodes outvoted (`DivergenceCheck`).
extension ClusterTailer {
    /// More rebuilds than this within `rebuildWindow`: the node stops applying (a divergence that
    /// replays the same way is a bug to report, not to loop on).
    static let rebuildLimit = 3
    static let rebuildWindow = Duration.seconds(600)

    /// The node's replica was outvoted: it stops serving (its streams close: their clients
    /// resume elsewhere or here later), starts again from the checkpoint and applies the log.
    func rebuild(after divergence: Divergence, on connection: PGConnection) throws {
        let nodeID = shared.settings.nodeID
        shared.logger.critical("cluster node \(nodeID) diverged \(divergence): rebuilding its replica")
        let now = ContinuousClock.now
        let again = shared.state.withLock { state in
            state.caughtUp = false
            state.pendingCheckpoints = []
            state.recentRebuilds = state.recentRebuilds.filter { now - $0 < Self.rebuildWindow } + [now]
            return state.recentRebuilds.count
        }
        shared.cutOff()
        guard again <= Self.rebuildLimit else {
            return shared.halt("it diverged \(again) times in \(Self.rebuildWindow), rebuilding did not help")
        }
        // What it has applied drops to 0 first, so the keeper keeps the log after the checkpoint.
        shared.applied.store(0, ordering: .releasing)
        try connection.query(ClusterSQL.publishApplied, [nodeID, "0"])
        let image = try ClusterCheckpoint.load(on: connection)
        try load(image)
        shared.state.withLock { state in
            state.divergence.rebuilt()
            state.rebuild = nil
            state.rebuilds += 1
        }
        shared.logger.notice(
            "cluster node \(nodeID) rebuilds from log position \(image?.checkpoint ?? 0); applying the log")
    }
}
