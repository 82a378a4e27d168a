import ObservationCore

/// Applying the log to the replica, and loading a checkpoint into it.
extension ClusterTailer {
    /// Applies every command after `applied` that is committed now.
    func readToEnd(_ connection: PGConnection) throws(PGError) {
        let settings = shared.settings
        var digest = shared.state.withLock { $0.digest }
        while true {
            let after = shared.applied.load(ordering: .acquiring)
            let rows = try connection.query(ClusterSQL.readLog, ["\(after)", "\(Self.page)"])
            for row in rows {
                guard let seq = row[0].flatMap({ Int($0) }), let node = row[1],
                    let origin = row[2].flatMap({ Int($0) }),
                    let text = row[3]
                else { continue }
                guard seq == shared.applied.load(ordering: .acquiring) + 1 else {
                    return shared.halt("the log jumps from \(shared.applied.load(ordering: .acquiring)) to \(seq)")
                }
                let command: Command
                do {
                    command = try Command(decoding: Array(text.utf8))
                } catch {
                    return shared.halt("command \(seq) cannot be read: \(error)")
                }
                let result = Result { () throws(CoreError) in
                    try store.execute(command) { effects in digest.add(effects) }
                }
                shared.applied.store(seq, ordering: .releasing)
                // The keeper's checkpoints are the state right after a multiple of `checkpointEvery`.
                var snapshot =
                    seq % settings.checkpointEvery == 0 && shared.isKeeper ? store.fullCheckpoint(position: seq) : nil
                snapshot?.counters["digest"] = .string(digest.hex)
                let waiter = shared.state.withLock { state in
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
                if snapshot != nil { shared.wakePresence() }
            }
            if rows.count < Self.page { return }
        }
    }

    /// Replaces the replica with the checkpoint's state (or an empty one), whose digest it takes.
    func load(_ image: PersistedImage?) throws {
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
        shared.applied.store(position, ordering: .releasing)
        shared.state.withLock { state in
            state.checkpointed = max(state.checkpointed, position)
            state.digest = digest
            state.digestPosition = position
        }
    }
}
