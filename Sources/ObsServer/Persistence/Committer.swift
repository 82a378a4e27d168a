import Dispatch
import Foundation
import Logging
import ObservationCore

/// Writes the store's commands to the data directory in group commits, on its own thread.
///
/// Each round takes the commands applied since the last one (under the store's lock),
/// encodes and appends them in one SQLite transaction, then lets streams send the events they
/// made (publishes them and wakes their logs: parked streams write on this thread), then opens
/// the gate for the answers waiting on them. Every `checkpointEvery`
/// commands (and at stop) a round is a checkpoint instead: the entities changed since the
/// last one (copy-on-write copies, encoded after the lock), and the commands they cover deleted.
/// A round starts as soon as the last one ends: the changes made while one round writes
/// and syncs form the next batch, so the more load, the bigger the batch, and a lone
/// write never waits for company (waiting for a quiet moment to gather bigger batches gave
/// fewer writes per second: BENCHMARKS.md, "Figures behind the code"). Idle, the thread
/// sleeps on a semaphore the store signals.
///
/// A failed write (disk full, I/O error) is retried with back-off, merged with whatever
/// changes after it into one batch (memory grows with the entities changed, not with the
/// retries); meanwhile the store refuses new writes with 503 `unavailable` (reads and streams
/// go on). Answers wait at most `commitTimeout` (`--commit-timeout`): when the next try
/// could not end before the oldest answer's time is up, the committer gives the batch up:
/// it rolls the store back to what the data directory holds (read back from it), refuses
/// the answers of every undone change with 503, and never writes that batch. Then it probes
/// the disk until it takes a write, and the store accepts writes again.
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
        /// Times the store was rolled back to the data directory (a commit failed past `--commit-timeout`).
        var rollbacks = 0
        var seconds = 0.0
    }

    let gate: CommitGate
    private let store: Store
    private let checkpointEvery: Int
    /// How long an answer may wait for its commit before its change is rolled back.
    private let commitTimeout: Duration
    private let database: Locked<DatabaseBox>
    private let logger: Logger
    private let signal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let state = Locked(State())
    private let counters = Locked(Figures())
    /// How long reading the data directory back took at start: what a first rollback should take.
    private let loaded: Duration

    /// `durable`: the position of the last command the data directory holds; `loaded`: how long
    /// reading it back took at start (what a rollback is first expected to take).
    init(
        store: Store, database: StoreDatabase, durable: Int, checkpointEvery: Int, commitTimeout: Duration,
        loaded: Duration, logger: Logger
    ) {
        self.store = store
        self.gate = CommitGate(durable: durable)
        self.checkpointEvery = checkpointEvery
        self.commitTimeout = commitTimeout
        self.loaded = loaded
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
        var rollbackEstimate = loaded  // how long a rollback takes: the last one's time
        while true {
            signal.wait()
            let stopping = state.withLock { $0.stopping }
            // At stop, a last checkpoint: the next start replays nothing.
            let batch = store.takeBatch(checkpoint: stopping, checkpointEvery: checkpointEvery)
            if !batch.isEmpty { pending = pending.map { $0.merged(with: batch) } ?? batch }
            guard let work = pending else {
                if stopping { break }
                // After a rollback nothing is pending: the disk is probed until it takes a write.
                if outage.isOn { retry(probe(), outage: &outage) }
                continue
            }
            let started = ContinuousClock.now
            if let failure = write(work) {
                if stopping {
                    logger.critical("stopping with changes not written to the data directory: \(failure)")
                    break
                }
                let backoff = outage.failed(failure, logger: logger)
                store.refuseWrites(because: failure.description, retryAfter: Int(backoff.inSeconds.rounded(.up)))
                // Another try, then a rollback if it fails too, must still end in the oldest answer's time.
                let attempt = ContinuousClock.now - started
                if let since = gate.oldestWait, .now + backoff + attempt + rollbackEstimate >= since + commitTimeout {
                    rollbackEstimate = rollBack(work)
                    pending = nil
                }
                retry(after: backoff)
                continue
            }
            // Writes are accepted again before the first answer of the recovering commit goes out.
            if outage.recovered(logger: logger) { store.acceptWrites() }
            // The fan-out before the answers: the other order cut writers' latency but raised W2's
            // delivery p99 (BENCHMARKS.md, "Issue 42: durable answers and the fan-out").
            store.publish(work)
            gate.open(through: work.sequence)
            pending = nil
            if stopping { break }
        }
        finished.signal()
    }

    /// Sleeps `backoff`, then runs the loop again even when nothing new arrives.
    private func retry(after backoff: Duration) {
        sleepThread(backoff)
        signal.signal()
    }

    /// A probe's outcome: writes are accepted again, or the next probe comes after a back-off.
    private func retry(_ failure: SQLiteError?, outage: inout OutageLog) {
        guard let failure else {
            if outage.recovered(logger: logger) { store.acceptWrites() }
            return
        }
        retry(after: outage.failed(failure, logger: logger))
    }

    /// Writes a little in a transaction of its own: whether the disk takes writes again.
    private func probe() -> SQLiteError? {
        do {
            try database.withLock { box throws(SQLiteError) in try box.database.probe() }
            return nil
        } catch {
            return error
        }
    }

    /// Gives `failed` up: the store goes back to what the data directory holds, and every answer
    /// of an undone change is refused (503, never written later: its positions are never reused).
    /// Returns how long it took.
    private func rollBack(_ failed: JournalBatch) -> Duration {
        let started = ContinuousClock.now
        let undone: (revision: Int, undoneThrough: Int)
        do {
            let image = try database.withLock { box throws(SQLiteError) in try box.database.load() }
            undone = try store.rollBack(to: image, undoing: failed, at: .now())
        } catch {
            // What memory holds can no longer be told apart from what is durable: a restart
            // reads the data directory, which is exactly what was answered 2xx.
            fatalError("cannot read the data directory back to roll back undurable changes: \(error)")
        }
        let took = ContinuousClock.now - started
        let error = APIError(
            CoreError(
                .unavailable,
                "the server could not make this change durable within \(commitTimeout.inSeconds) s (the data "
                    + "directory refuses writes); nothing was changed",
                details: ["retryAfter": 1]))
        gate.refuse(through: undone.undoneThrough, with: error)
        counters.withLock { $0.rollbacks += 1 }
        logger.error(
            """
            rolled back to revision \(undone.revision) (what the data directory holds) in \(took): \
            changes up to journal position \(undone.undoneThrough) could not be made durable within \
            --commit-timeout; their writes were answered 503
            """)
        return took
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
    private var backoff = Duration.milliseconds(50)
    private var since: ContinuousClock.Instant?
    private var lastReport: ContinuousClock.Instant?

    /// Writes fail now.
    var isOn: Bool { since != nil }

    /// A commit failed: logs it (the first time, then once a minute); returns the wait before the next try.
    mutating func failed(_ failure: SQLiteError, logger: Logger) -> Duration {
        let now = ContinuousClock.now
        defer { backoff = min(backoff * 2, .seconds(2)) }
        if since == nil {
            since = now
            logger.error("cannot write to the data directory; writes answer 503 until it can: \(failure)")
        } else if let lastReport, now - lastReport < .seconds(60) {
            return backoff
        } else {
            logger.error("still cannot write to the data directory: \(failure)")
        }
        lastReport = now
        return backoff
    }

    /// A commit succeeded; true when it ended an outage.
    mutating func recovered(logger: Logger) -> Bool {
        backoff = .milliseconds(50)
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
