import Foundation
import Logging

/// The appender: one thread that appends the commands this node's clients issue to the
/// cluster's log, in batches (whatever queued while the previous append was in flight, at most
/// `batchLimit`; group commit), each in one transaction, on a connection of its own.
///
/// An append whose connection broke is in doubt: see `resolveInDoubt`. A command still queued
/// at its deadline leaves the queue with a 503 (`ClusterShared.dropIfQueued`).
///
/// Thread-safety: `start` once; the rest runs on the appender's thread, which alone holds its
/// connection (a local of `run`).
final class ClusterAppender: Sendable {
    /// Opens a connection to the log (a new one after each failure).
    typealias Connect = @Sendable () throws -> any ClusterAppendLog

    let shared: ClusterShared
    let connect: Connect

    init(shared: ClusterShared, connect: @escaping Connect) {
        self.shared = shared
        self.connect = connect
    }

    /// The appender of a node on PostgreSQL.
    convenience init(shared: ClusterShared) {
        let settings = shared.settings
        self.init(shared: shared) { try PGConnection(url: settings.url, name: "obs \(settings.nodeID) appender") }
    }

    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "obs-appender"
        thread.start()
    }

    private func run() {
        var connection: (any ClusterAppendLog)?
        var backoff = ClusterBackoff()
        while true {
            // Woken by a submit or by stop; the timeout only bounds the wait.
            _ = shared.waitForAppends(timeout: .seconds(1))
            let limit = shared.settings.batchLimit
            let (batch, stopping, tag) = shared.state.withLock { state in
                (state.takeBatch(limit: limit), state.stopping, state.tag)
            }
            if stopping { break }
            guard !batch.isEmpty else { continue }
            if batch.count == limit { shared.wakeAppender() }  // more is queued
            do {
                if connection == nil { connection = try connect() }
                guard let connection, let tag else {
                    throw PGError(description: "not registered", connectionLost: false)
                }
                try connection.append(batch, as: tag)
                backoff.reset()
                shared.wakeTailer()
            } catch {
                let lostPID = connection?.backendPID
                connection = nil
                shared.logger.warning("cluster append failed: \(error)")
                if let lostPID, let tag {
                    resolveInDoubt(batch, as: tag, lostBackend: lostPID)
                } else {
                    shared.fail(batch.map(\.origin), "the cluster's database cannot be reached")
                }
                backoff.sleep()
            }
        }
        shared.threadFinished()
    }
}
