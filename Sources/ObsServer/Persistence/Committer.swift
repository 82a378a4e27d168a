import Dispatch
import Foundation
import Logging
import ObservationCore

/// Writes the store's commands to the data directory in group commits, on its own thread.
///
/// Each round takes the commands applied since the last one (under the store's lock),
/// encodes and appends them in one SQLite transaction, then opens the gate for the answers
/// waiting on them and lets streams send the events they made. Every `checkpointEvery`
/// commands (and at stop) a round is a checkpoint instead: the entities changed since the
/// last one (copy-on-write copies, encoded after the lock), and the commands they cover deleted.
/// A round starts as soon as the last one ends: the changes made while one round writes
/// and syncs form the next batch, so the more load, the bigger the batch, and a lone
/// write never waits for company. (Waiting for a quiet moment to gather bigger batches
/// was measured: 20–30 % fewer writes per second with 64 clients.) Idle, the thread
/// sleeps on a semaphore the store signals.
///
/// A failed write (disk full, I/O error) is retried with back-off, merged with whatever
/// changes after it into one batch (memory grows with the entities changed, not with the
/// retries). The answers it holds wait, since the changes they report are not durable yet;
/// meanwhile the store refuses new writes with 503 `unavailable` (reads and streams go on),
/// and accepts them again as soon as a commit succeeds.
final class Committer: Sendable {
    private struct State {
        var started = false
        var stopping = false
    }

    /// Figures for `/metrics`.
    struct Figures: Sendable {
        var commits = 0
        /// Commands appended to the log.
        var rows = 0
        var checkpoints = 0
        var failures = 0
        var seconds = 0.0
    }

    let gate: CommitGate
    private let store: Store
    private let checkpointEvery: Int
    private let database: Locked<DatabaseBox>
    private let logger: Logger
    private let signal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let state = Locked(State())
    private let counters = Locked(Figures())

    /// `durable`: the position of the last command the data directory holds.
    init(store: Store, database: StoreDatabase, durable: Int, checkpointEvery: Int, logger: Logger) {
        self.store = store
        self.gate = CommitGate(durable: durable)
        self.checkpointEvery = checkpointEvery
        self.database = Locked(DatabaseBox(database: database))
        self.logger = logger
    }

    var figures: Figures { counters.withLock { $0 } }

    func start() {
        store.onJournal { [signal] in signal.signal() }
        let thread = Thread { [self] in run() }
        thread.name = "obs-committer"
        state.withLock { $0.started = true }
        thread.start()
    }

    /// Writes what is left and stops the thread (call after the last change).
    func stop() {
        let running = state.withLock { state -> Bool in
            defer { state.stopping = true }
            return state.started && !state.stopping
        }
        guard running else { return }
        signal.signal()
        finished.wait()
    }

    private func run() {
        var pending: JournalBatch?  // taken, not yet durable; after a failed write, with all that came since
        var outage = OutageLog()
        while true {
            signal.wait()
            let stopping = state.withLock { $0.stopping }
            // At stop, a last checkpoint: the next start replays nothing.
            let batch = store.takeBatch(checkpoint: stopping, checkpointEvery: checkpointEvery)
            if !batch.isEmpty { pending = pending.map { $0.merged(with: batch) } ?? batch }
            guard let work = pending else {
                if stopping { break }
                continue
            }
            if let failure = write(work) {
                if stopping {
                    logger.critical("stopping with changes not written to the data directory: \(failure)")
                    break
                }
                let backoff = outage.failed(failure, logger: logger)
                store.refuseWrites(because: failure.description, retryAfter: Int(backoff.rounded(.up)))
                Thread.sleep(forTimeInterval: backoff)
                signal.signal()  // retry even when nothing new arrives
                continue
            }
            // Writes are accepted again before the first answer of the recovering commit goes out.
            if outage.recovered(logger: logger) { store.acceptWrites() }
            store.publish(work)
            gate.open(through: work.sequence)
            pending = nil
            if stopping { break }
        }
        finished.signal()
    }

    /// Writes a batch in one transaction; the failure, if any.
    private func write(_ batch: JournalBatch) -> SQLiteError? {
        let started = ContinuousClock.now
        do {
            try database.withLock { box throws(SQLiteError) in try box.database.write(batch) }
        } catch {
            counters.withLock { $0.failures += 1 }
            return error
        }
        let elapsed = (ContinuousClock.now - started).inSeconds
        counters.withLock { figures in
            figures.commits += 1
            figures.rows += batch.commands.count
            figures.checkpoints += batch.checkpoint == nil ? 0 : 1
            figures.seconds += elapsed
        }
        return nil
    }
}

/// The committer's view of an outage: back-off between retries, and a log that says when
/// writes stopped and started again (not one line per retry).
private struct OutageLog {
    private var backoff = 0.05
    private var since: ContinuousClock.Instant?
    private var lastReport: ContinuousClock.Instant?

    /// A commit failed: logs it (the first time, then once a minute); returns the wait before the next try.
    mutating func failed(_ failure: SQLiteError, logger: Logger) -> Double {
        let now = ContinuousClock.now
        if since == nil {
            since = now
            logger.error("cannot write to the data directory; writes answer 503 until it can: \(failure)")
        } else if let lastReport, now - lastReport < .seconds(60) {
            defer { backoff = min(backoff * 2, 2) }
            return backoff
        } else {
            logger.error("still cannot write to the data directory: \(failure)")
        }
        lastReport = now
        defer { backoff = min(backoff * 2, 2) }
        return backoff
    }

    /// A commit succeeded; true when it ended an outage.
    mutating func recovered(logger: Logger) -> Bool {
        backoff = 0.05
        guard let since else { return false }
        logger.notice("the data directory takes writes again (after \(ContinuousClock.now - since))")
        self.since = nil
        lastReport = nil
        return true
    }
}

/// The database, only used by the committer's thread (the lock documents and enforces it).
private struct DatabaseBox: @unchecked Sendable {
    // Unchecked: SQLiteDatabase is not Sendable; only the committer thread reaches it, under the lock.
    let database: StoreDatabase
}
