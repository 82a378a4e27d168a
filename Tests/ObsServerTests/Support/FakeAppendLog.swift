import ObservationCore

@testable import ObsServer

/// The cluster's log in memory, for the appender's tests: the origins appended, the server
/// processes terminated, and failures to order.
final class FakeAppendLog: ClusterAppendLog, Sendable {
    struct Contents {
        /// Every batch appended (committed), in order.
        var batches: [[Int]] = []
        var terminated: [Int32] = []
        var connects = 0
        /// The next this many connections fail (the database cannot be reached).
        var failingConnects = 0
        /// The next append commits, then its connection breaks (the outcome is lost).
        var breakAfterCommit = false
        /// The next append breaks before it commits.
        var breakBeforeCommit = false
        /// The database answers the next append with an error (its transaction rolled back).
        var refuseNext = false
        /// A terminated server process is still listed this many times before it is gone.
        var lingering = 0
        /// A terminated server process is still listed while this holds.
        var lingersWhile: (@Sendable () -> Bool)?
    }

    let contents = Locked(Contents())
    let backendPID: Int32 = 4242

    var appended: [Int] { contents.withLock { $0.batches.flatMap { $0 } } }

    /// What the appender's `connect` does: this log, unless a failure is ordered.
    func connect() throws -> any ClusterAppendLog {
        try contents.withLock { contents in
            contents.connects += 1
            guard contents.failingConnects == 0 else {
                contents.failingConnects -= 1
                throw PGError(description: "cannot connect (fake)", connectionLost: true)
            }
        }
        return self
    }

    func append(_ batch: [ClusterState.Queued], as tag: String) throws {
        try contents.withLock { contents in
            if contents.refuseNext {
                contents.refuseNext = false
                throw PGError(description: "canceling statement due to lock timeout (fake)", connectionLost: false)
            }
            if contents.breakBeforeCommit {
                contents.breakBeforeCommit = false
                throw PGError(description: "connection lost before the commit (fake)", connectionLost: true)
            }
            contents.batches.append(batch.map(\.origin))
            if contents.breakAfterCommit {
                contents.breakAfterCommit = false
                throw PGError(description: "connection lost after the commit (fake)", connectionLost: true)
            }
        }
    }

    func terminateBackend(_ pid: Int32) throws {
        contents.withLock { $0.terminated.append(pid) }
    }

    func backendExists(_ pid: Int32) throws -> Bool {
        contents.withLock { contents in
            if let lingersWhile = contents.lingersWhile, lingersWhile() { return true }
            guard contents.lingering > 0 else { return false }
            contents.lingering -= 1
            return true
        }
    }

    func appendedOrigins(_ origins: [Int], by tag: String) throws -> Set<Int> {
        Set(origins).intersection(appended)
    }
}
