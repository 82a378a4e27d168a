import ObservationCore
import Testing

@testable import ObsServer

/// The timer thread issues background commands without waiting for them (a cluster keeper's
/// go through the log and report later).
@Suite("Service timer", .serialized)
struct ServiceTimerTests {
    /// A command the timer issued, and how to report its outcome.
    struct Issued: Sendable {
        let action: Command.Action
        let at: ContinuousClock.Instant
        let done: @Sendable (Bool) -> Void
    }

    @Test("a command that is out is not issued again; a failure is tried again a second after it")
    func outstanding() throws {
        let store = Store()
        _ = try store.as(.admin).issue(
            .createObserver(id: "o1", tokenHash: "h", name: nil, lease: 1, retainObserved: false, replay: 10))
        let issued = Locked<[Issued]>([])
        let timer = ServiceTimer(
            store: store, hub: StreamHub(), heartbeatInterval: .seconds(1), idleQuiet: .milliseconds(50),
            lastRequest: { .now },
            act: { action, done in
                issued.withLock { $0.append(Issued(action: action, at: .now, done: done)) }  // reports later
            })
        store.onTimerChange { timer.reschedule() }
        timer.start()
        defer { timer.stop() }

        try waitUntil(within: .seconds(3)) { issued.withLock { $0.count } == 1 }  // the 1 s lease ran out
        sleepThread(.milliseconds(600))
        #expect(issued.withLock { $0.count } == 1, "not issued again while it is out, nor in a loop")
        let failed = ContinuousClock.now
        issued.withLock { $0[0] }.done(false)

        try waitUntil(within: .seconds(3)) { issued.withLock { $0.count } == 2 }
        let again = issued.withLock { $0[1] }
        #expect(again.at - failed >= .milliseconds(950), "tried again a second later: \(again.at - failed)")
        guard case .expireLeases = again.action else {
            Issue.record("issued \(again.action)")
            return
        }
        _ = try store.as(.server).issue(again.action)
        again.done(true)
        sleepThread(.milliseconds(300))
        #expect(issued.withLock { $0.count } == 2, "carried out: nothing more is due")
        #expect(store.nextLeaseDeadline == nil)
    }
}
