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

    /// What the appender does before its append: takes a batch and marks it sent.
    func send(_ shared: ClusterShared, limit: Int) -> [ClusterState.Queued] {
        shared.state.withLock { $0.send($0.takeBatch(limit: limit)) }
    }

    /// The error `number` was answered with (nil: not answered, or answered with an outcome).
    func refusal(_ number: Int) -> CoreError? {
        guard case .failure(let error)? = answers.withLock({ $0[number] }) else { return nil }
        return error
    }

    @Test("in doubt, commands found in the log are left to the tailer and the others go back to the front")
    func inDoubt() {
        let (shared, appender) = node()
        for number in 1...4 { submit(number, to: shared) }
        let batch = send(shared, limit: 3)
        log.contents.withLock { $0.batches = [[2]] }  // origin 2 committed before the connection broke

        appender.resolveInDoubt(batch, as: "n1#1", lostBackend: 99)

        #expect(log.contents.withLock { $0.terminated } == [99], "the lost server process is ended first")
        #expect(queued(shared) == [1, 3, 4], "not found: appended again, before what queued behind")
        #expect(waiting(shared) == [1, 2, 3, 4], "nobody is answered: 2 by applying it, the others later")
        #expect(shared.state.withLock { $0.waiters[1]?.sent } == false, "queued again: not sent")
        #expect(answers.withLock { $0.isEmpty })
    }

    @Test("in doubt, it waits until the lost server process has ended and retries while the database is away")
    func waitsAndRetries() {
        let (shared, appender) = node()
        for number in 1...2 { submit(number, to: shared) }
        let batch = send(shared, limit: 2)
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

    @Test("at its deadline a command in doubt is answered 504 outcomeUnknown, one queued behind it 503")
    func deadline() throws {
        let (shared, appender) = node(commitTimeout: .milliseconds(200))
        submit(1, to: shared)
        let batch = send(shared, limit: 10)  // 1 is in flight
        submit(2, to: shared)
        // The lost server process ends only once 2 was answered (or after `backendEndWait`).
        log.contents.withLock { [answers] in $0.lingersWhile = { answers.withLock { $0[2] == nil } } }
        let started = ContinuousClock.now

        appender.resolveInDoubt(batch, as: "n1#1", lostBackend: 99)

        let unknown = try #require(refusal(1))
        #expect(unknown.code == .outcomeUnknown && unknown.details["outcome"] == "unknown")
        #expect(unknown.message.contains("Idempotency-Key"), "the answer says a repeat is safe")
        #expect(APIError(unknown).status == 504)
        let refused = try #require(refusal(2))
        #expect(refused.code == .unavailable && refused.message.contains("--commit-timeout"))
        #expect(APIError(refused).status == 503)
        #expect(ContinuousClock.now - started >= .milliseconds(200), "answered at their deadline, not before")
        #expect(queued(shared).isEmpty, "1 is not in the log and was answered: dropped, never applied; 2 left")
        #expect(waiting(shared).isEmpty)
    }

    @Test("a command queued again after a doubt keeps its deadline: 503 at it if it is still not sent")
    func requeuedKeepsItsDeadline() throws {
        let (shared, appender) = node(commitTimeout: .milliseconds(300))
        let started = ContinuousClock.now
        submit(1, to: shared)
        let batch = send(shared, limit: 1)
        appender.resolveInDoubt(batch, as: "n1#1", lostBackend: 99)  // not in the log: queued again
        #expect(queued(shared) == [1])

        try waitUntil(within: .seconds(3)) { answers.withLock { $0[1] != nil } }
        let refused = try #require(refusal(1))
        #expect(refused.code == .unavailable, "known not applied: 503, not 504")
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        #expect(queued(shared).isEmpty && waiting(shared).isEmpty)
    }

    @Test("a command taken but not sent by its deadline is answered 503 and is never sent")
    func takenNotSent() throws {
        let (shared, _) = node(commitTimeout: .milliseconds(100))
        submit(1, to: shared)
        submit(2, to: shared)
        let batch = shared.state.withLock { $0.takeBatch(limit: 2) }  // connecting…
        try waitUntil(within: .seconds(3)) { answers.withLock { $0.count == 2 } }

        #expect(refusal(1)?.code == .unavailable && refusal(2)?.code == .unavailable)
        #expect(shared.state.withLock { $0.send(batch) }.isEmpty, "answered 503: it must not reach the log")
    }

    @Test("an append the database refuses is answered 503 at once, without a doubt to resolve")
    func refused() throws {
        let (shared, appender) = node()
        log.contents.withLock { $0.refuseNext = true }
        appender.start()
        defer { stop(shared) }
        submit(1, to: shared)
        try waitUntil(within: .seconds(5)) { answers.withLock { $0[1] != nil } }

        #expect(refusal(1)?.code == .unavailable)
        #expect(log.contents.withLock { $0.terminated.isEmpty && $0.batches.isEmpty })
        submit(2, to: shared)
        try waitUntil(within: .seconds(5)) { log.appended == [2] }
    }

    @Test("the appender's thread appends what is queued, and in doubt neither loses nor repeats a command")
    func thread() throws {
        let (shared, appender) = node()
        log.contents.withLock {
            $0.breakAfterCommit = true  // 1 and 2: committed, outcome lost
            $0.breakBeforeCommit = false
        }
        appender.start()
        defer { stop(shared) }
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

    func stop(_ shared: ClusterShared) {
        _ = shared.state.withLock { $0.stop() }
        shared.wakeAppender()
        shared.waitForThreads(1, timeout: .seconds(5))
    }
}
