import Testing

@testable import ObservationCore

/// Streams held by cluster nodes: a lease counts only while no node holds a stream, and a
/// node that is gone (`nodeDown`) releases exactly the streams it held.
@Suite("Cluster stream holders")
struct ClusterStreamTests {
    let store = Store()
    let id = "obs_0000000000000001"

    init() throws {
        _ = try store.execute(
            Command(
                time: Timestamp(milliseconds: 1_000),
                .createObserver(id: id, tokenHash: "h", name: nil, lease: 10, retainObserved: false, replay: 100)))
    }

    @discardableResult
    func run(_ at: Int64, _ action: Command.Action) throws -> Outcome {
        try store.execute(Command(time: Timestamp(milliseconds: at), action))
    }

    func expired(at time: Int64) throws -> [String] {
        guard case .expired(let ids) = try run(time, .expireLeases) else { return ["not an expiry"] }
        return ids
    }

    @Test("a node going down releases only its own streams; the lease runs from then")
    func nodeDownReleasesItsStreams() throws {
        try run(2_000, .openStream(observer: id, holder: "n1#1"))
        try run(2_000, .openStream(observer: id, holder: "n2#1"))
        try run(3_000, .nodeDown(holder: "n1#1"))
        #expect(try store.observer(id).streams == 1)
        #expect(try store.observer(id).expiresAt == nil, "n2 still holds the lease")
        try run(3_500, .closeStream(observer: id, holder: "n1#1"))
        #expect(try store.observer(id).streams == 1, "a close after its node went down changes nothing")
        try run(4_000, .nodeDown(holder: "n2#1"))
        #expect(try store.observer(id).expiresAt == Timestamp(milliseconds: 14_000))
        #expect(try expired(at: 13_999) == [])
        #expect(try expired(at: 14_000) == [id])
        #expect(try expired(at: 14_001) == [], "exactly once")
    }

    @Test("a node's streams do not count against the single server's stream limit")
    func holdersSkipTheStreamLimit() throws {
        var limits = StoreLimits()
        limits.maxStreams = 1
        let limited = Store(limits: limits)
        for _ in 0..<3 {
            _ = try limited.execute(
                Command(time: Timestamp(milliseconds: 1), .openStream(observer: nil, holder: "n1#1")))
        }
        #expect(throws: CoreError.self) {
            _ = try limited.execute(Command(time: Timestamp(milliseconds: 1), .openStream(observer: nil, holder: nil)))
        }
        _ = try limited.execute(Command(time: Timestamp(milliseconds: 2), .nodeDown(holder: "n1#1")))
        _ = try limited.execute(Command(time: Timestamp(milliseconds: 3), .openStream(observer: nil, holder: nil)))
    }
}
