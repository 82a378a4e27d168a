import ObservationCore

/// Publishing and judging digest samples (`DivergenceCheck`), on the presence thread.
extension ClusterPresence {
    /// Publishes this node's digest samples (and its current digest), then judges its pending
    /// samples against the other nodes' reports; outvoted, it has the tailer rebuild.
    func checkDivergence(on connection: PGConnection) throws {
        let nodeID = shared.settings.nodeID
        let (samples, positions, peers, generation) = shared.state.withLock { state in
            if state.rebuild == nil { state.divergence.sample(state.digestPosition, state.digest) }
            let divergence = state.divergence
            return (divergence.unpublished, divergence.pending.map(\.position), state.nodes - 1, divergence.generation)
        }
        if let last = samples.last {
            try connection.query(
                ClusterSQL.publishDigests,
                [
                    nodeID, PGConnection.arrayLiteral(samples.map(\.position)),
                    PGConnection.arrayLiteral(samples.map(\.digest.hex)),
                ])
            shared.state.withLock { $0.divergence.published(through: last.position, generation: generation) }
        }
        guard peers > 0, !positions.isEmpty else { return }
        var reports: [Int: [String: String]] = [:]
        for row in try connection.query(ClusterSQL.peerDigests, [PGConnection.arrayLiteral(positions), nodeID]) {
            guard let position = row[0].flatMap({ Int($0) }), let node = row[1], let digest = row[2] else { continue }
            reports[position, default: [:]][node] = digest
        }
        let divergence = shared.state.withLock { state -> Divergence? in
            guard state.rebuild == nil,
                let found = state.divergence.judge(reports: reports, peers: peers, generation: generation)
            else {
                return nil
            }
            state.rebuild = found
            return found
        }
        if divergence != nil { shared.wakeTailer() }
    }
}
