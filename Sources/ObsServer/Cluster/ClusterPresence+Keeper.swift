import Logging
import ObservationCore

/// The keeper's duties on the presence thread: reporting nodes down and writing checkpoints.
extension ClusterPresence {
    /// The keeper's round: every node whose liveness lock is free is down.
    func reportNodesDown(on connection: PGConnection) throws {
        let rows = try connection.query(ClusterSQL.otherLiveNodes, [shared.settings.nodeID])
        for row in rows {
            guard let node = row[0], let incarnation = row[1].flatMap({ Int($0) }),
                let key = row[2].flatMap({ Int32($0) })
            else { continue }
            guard try ClusterSchema.tryLock(ClusterSchema.livenessClass, key, on: connection) else { continue }
            try connection.query(ClusterSQL.advisoryUnlock, ["\(ClusterSchema.livenessClass)", "\(key)"])
            reportDown(node, incarnation)
        }
    }

    /// Appends `nodeDown` for an incarnation, without waiting: once it is applied, the next
    /// round records that it was reported (`recordReportedDown`); if it fails, a later round
    /// reports it again (a second `nodeDown` of a holder changes nothing).
    func reportDown(_ node: String, _ incarnation: Int) {
        let report = ClusterState.DownReport(node: node, incarnation: incarnation)
        guard shared.state.withLock({ $0.reportingDown.insert(report).inserted }) else { return }  // on its way
        shared.logger.notice("cluster node \(report.holder) is gone: its streams close")
        shared.submit(Command(time: .now(), .nodeDown(holder: report.holder), as: .server)) { [shared] result in
            let applied = if case .success = result { true } else { false }
            shared.state.withLock { state in
                state.reportingDown.remove(report)
                if applied { state.reportedDown.append(report) }
            }
            if applied { shared.wakePresence() }
        }
    }

    /// Records the incarnations whose `nodeDown` was applied (the keeper stops looking at them).
    func recordReportedDown(on connection: PGConnection) throws {
        let reports = shared.state.withLock { state in
            defer { state.reportedDown = [] }
            return state.reportedDown
        }
        for report in reports {
            try connection.query(ClusterSQL.markReportedDown, [report.node, "\(report.incarnation)"])
        }
    }

    /// The keeper writes the latest pending checkpoint the other nodes' digests confirmed, then
    /// deletes the log no live node needs.
    func checkpoint(on connection: PGConnection) throws {
        let pending = shared.state.withLock { state in
            state.rebuild != nil
                ? nil
                : state.pendingCheckpoints.last { state.divergence.confirms($0.position, peers: state.nodes - 1) }
        }
        if let pending {
            let started = ContinuousClock.now
            if try ClusterCheckpoint.write(pending, on: connection) {
                let elapsed = ContinuousClock.now - started
                shared.logger.info("cluster checkpoint at log position \(pending.position) written in \(elapsed)")
            }
            shared.state.withLock { state in
                state.pendingCheckpoints.removeAll { $0.position <= pending.position }
                state.checkpointed = max(state.checkpointed, pending.position)
            }
        }
        let through = shared.state.withLock { $0.checkpointed }
        if through > 0 { try ClusterCheckpoint.truncate(through: through, on: connection) }
    }
}
