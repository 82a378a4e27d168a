import ObservationCore
import Testing

@testable import ObsServer

/// How a cluster node judges its digest against the other nodes' reports.
@Suite("Divergence check")
struct DivergenceCheckTests {
    let honest = ApplyDigest(value: 1)
    let wrong = ApplyDigest(value: 2)

    @Test("a node outvoted by two others diverged; the two others did not")
    func outvoted() throws {
        var deviant = DivergenceCheck()
        deviant.sample(128, wrong)
        let verdict = deviant.judge(
            reports: [128: ["n2": honest.hex, "n3": honest.hex]], peers: 2, generation: deviant.generation)
        let found = try #require(verdict)
        #expect(found.position == 128 && found.theirs == honest.hex)
        #expect(found.votes.mine == 1 && found.votes.theirs == 2)
        #expect(deviant.settledThrough == 128 && deviant.pending.isEmpty)

        var majority = DivergenceCheck()
        majority.sample(128, honest)
        #expect(
            majority.judge(
                reports: [128: ["n1": wrong.hex, "n3": honest.hex]], peers: 2, generation: majority.generation) == nil)
        #expect(majority.pending.isEmpty, "judged once every peer reported")
    }

    @Test("two nodes that disagree both rebuild; agreement is no divergence")
    func tie() {
        var check = DivergenceCheck()
        check.sample(256, honest)
        #expect(check.judge(reports: [256: ["n2": wrong.hex]], peers: 1, generation: 0) != nil)
        var agreeing = DivergenceCheck()
        agreeing.sample(256, honest)
        #expect(agreeing.judge(reports: [256: ["n2": honest.hex]], peers: 1, generation: 0) == nil)
    }

    @Test("a sample waits until every live peer reported it; alone, nothing is judged")
    func waitsForReports() {
        var check = DivergenceCheck()
        check.sample(128, wrong)
        #expect(check.judge(reports: [128: ["n2": honest.hex]], peers: 2, generation: 0) == nil)
        #expect(check.pending.count == 1)
        #expect(check.judge(reports: [:], peers: 0, generation: 0) == nil)
        #expect(check.judge(reports: [128: ["n2": honest.hex, "n3": honest.hex]], peers: 2, generation: 0) != nil)
    }

    @Test("positions up to a divergence acted on are not sampled again; the kept samples are bounded")
    func settledAndBounded() {
        var check = DivergenceCheck()
        check.sample(100, wrong)
        _ = check.judge(reports: [100: ["n2": honest.hex, "n3": honest.hex]], peers: 2, generation: 0)
        check.rebuilt()
        #expect(check.generation == 1)
        check.sample(100, honest)
        #expect(check.pending.isEmpty && check.unpublished.isEmpty)
        for position in 101...300 { check.sample(position, honest) }
        #expect(check.pending.count == DivergenceCheck.kept)
        #expect(check.pending.first?.position == 300 - DivergenceCheck.kept + 1)
        check.published(through: 300, generation: 0)
        #expect(check.unpublished.count == DivergenceCheck.kept, "a round from before the rebuild publishes nothing")
        check.published(through: 250, generation: 1)
        #expect(check.unpublished.map(\.position) == Array(251...300))
        check.sample(300, wrong)
        #expect(check.pending.last?.digest == honest, "a position is sampled once")
    }

    @Test("a checkpoint is written only once a position at or after it was judged in agreement")
    func confirmation() {
        var check = DivergenceCheck()
        #expect(check.confirms(100, peers: 0), "a single node confirms itself")
        #expect(!check.confirms(100, peers: 2))
        check.sample(100, honest)
        check.sample(128, honest)
        #expect(check.judge(reports: [128: ["n2": honest.hex, "n3": honest.hex]], peers: 2, generation: 0) == nil)
        #expect(check.confirms(100, peers: 2) && check.confirms(128, peers: 2) && !check.confirms(129, peers: 2))
        #expect(check.pending.map(\.position) == [100], "the position without every report waits")
        #expect(
            check.judge(reports: [100: ["n2": wrong.hex, "n3": wrong.hex]], peers: 2, generation: 7) == nil,
            "a round from another generation judges nothing")
    }
}
