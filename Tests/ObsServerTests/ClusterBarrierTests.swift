import ObservationCore
import Testing

@testable import ObsServer

/// A cluster read waits for the tailer's next complete read, at most the commit timeout.
@Suite("Cluster read barriers", .serialized)
struct ClusterBarrierTests {
    @Test("a read the tailer does not release is told so at its own deadline, one sweep at a time")
    func deadline() throws {
        let node = Self.connectedNode(commitTimeout: .milliseconds(300))
        let told = Locked<[Int: (Bool, Duration)]>([:])
        let started = ContinuousClock.now
        func read(_ number: Int) {
            node.afterCatchingUp { caughtUp in
                let elapsed = ContinuousClock.now - started
                told.withLock { $0[number] = (caughtUp, elapsed) }
            }
        }
        read(1)
        sleepThread(.milliseconds(150))
        read(2)
        #expect(node.shared.state.withLock { $0.barriers.count } == 2)

        try waitUntil(within: .seconds(3)) { told.withLock { $0.count == 2 } }
        let answers = told.withLock { $0 }
        #expect(answers[1]?.0 == false && answers[2]?.0 == false, "neither read was released")
        let first = try #require(answers[1]?.1)
        let second = try #require(answers[2]?.1)
        #expect(first >= .milliseconds(300) && first < .seconds(2), "\(first)")
        #expect(second >= .milliseconds(450) && second < .seconds(2), "not before its own deadline: \(second)")
        #expect(node.shared.state.withLock { $0.barriers.isEmpty && !$0.barrierSweep })
    }

    @Test("a read released by the tailer is told once; its deadline then changes nothing, and the next has its own")
    func released() throws {
        let node = Self.connectedNode(commitTimeout: .milliseconds(100))
        let told = Self.read(on: node)
        // The tailer: a complete read begins, then ends.
        let mark = node.shared.state.withLock { $0.nextBarrier }
        for barrier in node.shared.state.withLock({ $0.takeBarriers(before: mark) }) { barrier.run(true) }
        // The sweep at its deadline finds nothing and stops.
        try waitUntil(within: .seconds(3)) { node.shared.state.withLock { !$0.barrierSweep } }
        #expect(told.withLock { $0 } == [true])
        // The next read schedules a sweep of its own.
        node.afterCatchingUp { caughtUp in told.withLock { $0.append(caughtUp) } }
        try waitUntil(within: .seconds(3)) { told.withLock { $0.count } == 2 }
        #expect(told.withLock { $0 } == [true, false])
    }

    @Test("a read whose deadline comes while the tailer reads for it is told at the deadline, once")
    func deadlineDuringTheRead() throws {
        let node = Self.connectedNode(commitTimeout: .milliseconds(100))
        let told = Self.read(on: node)
        let mark = node.shared.state.withLock { $0.nextBarrier }  // the tailer's read begins (and hangs)
        try waitUntil(within: .seconds(3)) { !told.withLock { $0.isEmpty } }
        #expect(told.withLock { $0 } == [false])
        #expect(node.shared.state.withLock { $0.takeBarriers(before: mark) }.isEmpty, "the read ends: nothing left")
    }

    @Test("while the node cannot read the log, a read runs at once from the local replica")
    func notConnected() {
        let node = ClusterNode(
            settings: ClusterSettings(url: "", nodeID: "n1"), store: Store(limits: StoreLimits()),
            limits: StoreLimits(), logger: testLogger())
        let told = Self.read(on: node)
        #expect(told.withLock { $0 } == [true])
    }

    /// A node whose tailer reads the log, with a commit timeout of `commitTimeout`.
    static func connectedNode(commitTimeout: Duration) -> ClusterNode {
        let node = ClusterNode(
            settings: ClusterSettings(url: "", nodeID: "n1", commitTimeout: commitTimeout),
            store: Store(limits: StoreLimits()), limits: StoreLimits(), logger: testLogger())
        node.shared.state.withLock { $0.tailerConnected = true }
        return node
    }

    /// One read on `node`: what it was told is appended to the list returned.
    static func read(on node: ClusterNode) -> Locked<[Bool]> {
        let told = Locked<[Bool]>([])
        node.afterCatchingUp { caughtUp in told.withLock { $0.append(caughtUp) } }
        return told
    }
}
