import Foundation
import Logging
import ObservationCore

/// The tailer: one thread that reads the cluster's log in order (`LISTEN obs_log` wakes it; a
/// read every `pollInterval` is the fallback) and applies every command, this node's own
/// included, to the local `Store` (`ClusterTailer+Apply.swift`). A client's answer is the
/// outcome of applying its command, so every node decides every request the same way, and
/// nothing is applied (or streamed) that is not durable in PostgreSQL.
///
/// It also runs the read barriers (each complete read releases the reads that arrived before
/// it) and rebuilds the replica when the presence thread found it outvoted
/// (`ClusterTailer+Rebuild.swift`).
///
/// Thread-safety: `load` before `start` (by `ClusterNode.start`); then the tailer's thread
/// alone applies commands and holds its connection.
final class ClusterTailer: Sendable {
    /// The most log rows one read takes.
    static let page = 512

    let shared: ClusterShared
    let store: Store

    init(shared: ClusterShared, store: Store) {
        self.shared = shared
        self.store = store
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "obs-tailer"
        thread.start()
    }

    private func run() {
        let settings = shared.settings
        var connection: PGConnection?
        var backoff = ClusterBackoff()
        while !shared.state.withLock({ $0.stopping || $0.broken != nil }) {
            do {
                if connection == nil {
                    let opened = try PGConnection(
                        url: settings.url, name: "obs \(settings.nodeID) tailer", timeout: settings.queryTimeout)
                    try opened.query(ClusterSQL.listen)
                    connection = opened
                    shared.state.withLock { $0.tailerConnected = true }
                }
                guard let connection else { continue }
                if let divergence = shared.state.withLock({ $0.rebuild }) {
                    try rebuild(after: divergence, on: connection)
                }
                // The reads waiting now are released by this read; they stay listed meanwhile
                // (their deadline may come first: `ClusterShared.sweepBarriers`).
                let mark = shared.state.withLock { $0.nextBarrier }
                try readToEnd(connection)
                let barriers = shared.state.withLock { state in
                    state.caughtUp = true
                    return state.takeBarriers(before: mark)
                }
                for barrier in barriers { barrier.run(true) }
                backoff.reset()
                if shared.state.withLock({ !$0.barriers.isEmpty }) { continue }
                _ = try connection.waitForNotification(orWake: shared.tailerWake, timeout: settings.pollInterval)
                shared.drainTailerWake()
            } catch {
                connection = nil
                let barriers = shared.state.withLock { state in
                    state.tailerConnected = false
                    return state.takeBarriers()
                }
                for barrier in barriers { barrier.run(true) }  // stale reads rather than none
                shared.logger.warning("cluster log reader: \(error); reconnecting")
                backoff.sleep()
            }
        }
        shared.threadFinished()
    }
}
