import Foundation
import Logging

/// The appender: one thread that appends the commands this node's clients issue to the
/// cluster's log, in batches (whatever queued while the previous append was in flight, at most
/// `batchLimit`; group commit), each in one transaction, on a connection of its own.
///
/// An append the database refused (an error answer: its transaction rolled back) is answered
/// 503. One whose connection broke, or whose answer did not come within the connection's
/// timeout, is in doubt: see `resolveInDoubt`. Whatever the appender is doing, each command's
/// answer comes by its deadline (`ClusterShared.expire`): 503 if it was not sent, else 504.
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
        self.init(shared: shared) {
            try PGConnection(
                url: settings.url, name: "obs \(settings.nodeID) appender", timeout: settings.commitTimeout)
        }
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
            guard let tag else {
                shared.fail(batch.map(\.origin), "the node is not registered with the cluster now")
                continue
            }
            switch append(batch, as: tag, on: &connection) {
            case .done:
                backoff.reset()
            case .refused:
                backoff.sleep()
            case .inDoubt(let sent, let lostBackend):
                resolveInDoubt(sent, as: tag, lostBackend: lostBackend)
                backoff.sleep()
            }
        }
        shared.threadFinished()
    }

    private enum Appended {
        case done
        /// Not sent (no connection), or refused by the database: answered 503.
        case refused
        /// Sent, and the connection broke or did not answer in time (it is dropped).
        case inDoubt([ClusterState.Queued], lostBackend: Int32)
    }

    /// Sends what of `batch` still waits (`ClusterState.send`) in one append, connecting first
    /// if needed; answers 503 what is known not applied.
    private func append(
        _ batch: [ClusterState.Queued], as tag: String, on connection: inout (any ClusterAppendLog)?
    ) -> Appended {
        let log: any ClusterAppendLog
        do {
            log = try connection ?? connect()
            connection = log
        } catch {
            shared.logger.warning("cluster append: \(error)")
            shared.fail(batch.map(\.origin), "the cluster's database cannot be reached")
            return .refused
        }
        let sending = shared.state.withLock { $0.send(batch) }
        guard !sending.isEmpty else { return .done }
        do {
            try log.append(sending, as: tag)
            shared.wakeTailer()
            return .done
        } catch let error as PGError where !error.connectionLost {
            // An error answer: the append's transaction rolled back (a statement or lock timeout…).
            shared.logger.warning("cluster append refused: \(error)")
            shared.fail(sending.map(\.origin), "the cluster's database refused the change")
            return .refused
        } catch {
            connection = nil
            shared.logger.warning("cluster append in doubt: \(error)")
            return .inDoubt(sending, lostBackend: log.backendPID)
        }
    }
}
