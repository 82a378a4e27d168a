import Dispatch
import ObservationCore
import Testing

@testable import ObsServer

/// The appender and its queue, on a log in memory (no PostgreSQL).
@Suite("Cluster appender", .serialized)
struct ClusterAppenderTests {
    let log = FakeAppendLog()
    let answers = Locked<[Int: Result<Outcome, CoreError>]>([:])

    func node(commitTimeout: Duration = .seconds(30)) -> (ClusterShared, ClusterAppender) {
        let shared = ClusterShared(
            settings: ClusterSettings(url: "", nodeID: "n1", commitTimeout: commitTimeout), logger: testLogger())
        shared.state.withLock { $0.tag = "n1#1" }
        return (shared, ClusterAppender(shared: shared) { [log] in try log.connect() })
    }

    /// Submits a command whose answer is recorded under `number`.
    func submit(_ number: Int, to shared: ClusterShared) {
        shared.submit(Command(time: .now(), .nodeDown(holder: "n\(number)#1"), as: .server)) { [answers] result in
            answers.withLock { $0[number] = result }
        }
    }

    func queued(_ shared: ClusterShared) -> [Int] { shared.state.withLock { $0.queue.map(\.origin) } }
    func waiting(_ shared: ClusterShared) -> Set<Int> { shared.state.withLock { Set($0.waiters.keys) } }

    @Test("in doubt, commands found in the log are left to the tailer and the others go back to the front")
    func inDoubt() {
        let (shared, appender) = node()
        for number in 1...4 { submit(number, to: shared) }
        let batch = shared.state.withLock { $0.takeBatch(limit: 3) }
        log.contents.withLock { $0.batches = [[2]] }  // origin 2 committed before the connection broke

        appender.resolveInDoubt(batch, as: "n1#1", lostBackend: 99)

        #expect(log.contents.withLock { $0.terminated } == [99], "the lost server process is ended first")
        #expect(queued(shared) == [1, 3, 4], "not found: appended again, before what queued behind")
        #expect(waiting(shared) == [1, 2, 3, 4], "nobody is answered: 2 by applying it, the others later")
        #expect(answers.withLock { $0.isEmpty })
    }

    @Test("in doubt, it waits until the lost server process has ended and retries while the database is away")
    func waitsAndRetries() {
        let (shared, appender) = node()
        for number in 1...2 { submit(number, to: shared) }
        let batch = shared.state.withLock { $0.takeBatch(limit: 2) }
        log.contents.withLock {
            $0.failingConnects = 2
            $0.lingering = 3
        }

        appender.resolveInDoubt(batch, as: "n1#1", lostBackend: 99)

        let contents = log.contents.withLock { $0 }
        #expect(contents.connects == 3 && contents.terminated == [99])
        #expect(contents.lingering == 0, "looked again until the process was gone")
        #expect(queued(shared) == [1, 2])
    }

    @Test("a command still queued at its deadline leaves the queue and is answered 503, also behind a batch in doubt")
    func deadline() throws {
        let (shared, appender) = node(commitTimeout: .milliseconds(200))
        submit(1, to: shared)
        let batch = shared.state.withLock { $0.takeBatch(limit: 10) }  // 1 is in flight
        submit(2, to: shared)
        // The lost server process ends only once 2 was answered (or after `backendEndWait`).
        log.contents.withLock { [answers] in $0.lingersWhile = { answers.withLock { $0[2] == nil } } }
        let started = ContinuousClock.now

        appender.resolveInDoubt(batch, as: "n1#1", lostBackend: 99)

        let refused = try #require(answers.withLock { $0[2] })
        guard case .failure(let error) = refused else {
            Issue.record("2 was answered \(refused)")
            return
        }
        #expect(error.code == .unavailable && error.message.contains("--commit-timeout"))
        #expect(ContinuousClock.now - started >= .milliseconds(200), "answered at its deadline, not before")
        #expect(queued(shared) == [1], "1 was in flight at its deadline: the database decides it")
        #expect(waiting(shared) == [1])
    }

    @Test("submitAndWait gives up after the commit timeout when the database takes nothing")
    func submitAndWaitIsBounded() throws {
        let (shared, _) = node(commitTimeout: .milliseconds(300))
        let started = ContinuousClock.now
        let result = shared.submitAndWait(Command(time: .now(), .nodeDown(holder: "n9#1"), as: .server))
        let elapsed = ContinuousClock.now - started
        guard case .failure(let error) = result else {
            Issue.record("answered \(result)")
            return
        }
        #expect(error.code == .unavailable)
        #expect(elapsed >= .milliseconds(250) && elapsed < .seconds(2), "\(elapsed)")
        // Its deadline and the wait's end are the same instant: the drop may come just after.
        try waitUntil(within: .seconds(2)) { queued(shared).isEmpty }
    }

    @Test("the appender's thread appends what is queued, and in doubt neither loses nor repeats a command")
    func thread() throws {
        let (shared, appender) = node()
        log.contents.withLock {
            $0.breakAfterCommit = true  // 1 and 2: committed, outcome lost
            $0.breakBeforeCommit = false
        }
        appender.start()
        defer {
            _ = shared.state.withLock { $0.stop() }
            shared.wakeAppender()
            shared.waitForThreads(1, timeout: .seconds(5))
        }
        for number in 1...2 { submit(number, to: shared) }
        try waitUntil(within: .seconds(5)) {
            log.contents.withLock { !$0.terminated.isEmpty } && queued(shared).isEmpty
        }
        log.contents.withLock { $0.breakBeforeCommit = true }  // 3: lost before its commit
        submit(3, to: shared)
        try waitUntil(within: .seconds(5)) { log.appended.contains(3) }

        #expect(log.appended.sorted() == [1, 2, 3], "each command once")
        #expect(log.contents.withLock { $0.terminated } == [4242, 4242])
        #expect(waiting(shared) == [1, 2, 3], "answers come from the tailer")
    }
}
