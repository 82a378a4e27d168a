import Testing

@testable import ObsServer

@Suite("Cluster backoff")
struct ClusterBackoffTests {
    @Test("it doubles from 50 ms up to 2 s and starts over after a success")
    func doubles() {
        var backoff = ClusterBackoff()
        let delays = (0..<8).map { _ in backoff.delay() }
        #expect(delays == [50, 100, 200, 400, 800, 1600, 2000, 2000].map { Duration.milliseconds($0) })
        backoff.reset()
        #expect(backoff.delay() == .milliseconds(50))
    }

    @Test("a fixed interval stays fixed")
    func fixed() {
        var backoff = ClusterBackoff(first: .seconds(1), limit: .seconds(1))
        #expect((0..<3).map { _ in backoff.delay() } == [.seconds(1), .seconds(1), .seconds(1)])
    }

    @Test("a limit below the first delay is the first delay")
    func limitBelowFirst() {
        var backoff = ClusterBackoff(first: .milliseconds(500), limit: .milliseconds(100))
        #expect(backoff.delay() == .milliseconds(500) && backoff.delay() == .milliseconds(500))
    }
}
