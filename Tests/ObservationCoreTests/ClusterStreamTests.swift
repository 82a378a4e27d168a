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
                .createObserver(id: id, tokenHash: "h", name: nil, lease: 10, retainObserved: false, replay: 100),
                as: .admin))
    }

    @discardableResult
    func run(_ at: Int64, _ action: Command.Action) throws -> Outcome {
        try store.execute(
            Command(time: Timestamp(milliseconds: at), action, as: action.isBackground ? .server : .admin))
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
        #expect(try store.as(.admin).observer(id).streams == 1)
        #expect(try store.as(.admin).observer(id).expiresAt == nil, "n2 still holds the lease")
        try run(3_500, .closeStream(observer: id, holder: "n1#1"))
        #expect(try store.as(.admin).observer(id).streams == 1, "a close after its node went down changes nothing")
        try run(4_000, .nodeDown(holder: "n2#1"))
        #expect(try store.as(.admin).observer(id).expiresAt == Timestamp(milliseconds: 14_000))
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
                Command(time: Timestamp(milliseconds: 1), .openStream(observer: nil, holder: "n1#1"), as: .server))
        }
        #expect(throws: CoreError.self) {
            _ = try limited.execute(
                Command(time: Timestamp(milliseconds: 1), .openStream(observer: nil, holder: nil), as: .server))
        }
        _ = try limited.execute(Command(time: Timestamp(milliseconds: 2), .nodeDown(holder: "n1#1"), as: .server))
        _ = try limited.execute(
            Command(time: Timestamp(milliseconds: 3), .openStream(observer: nil, holder: nil), as: .server))
    }
}

/// A replica loaded from an exact (cluster) checkpoint continues exactly like the replica it
/// was taken from: the same answers, the same events, byte for byte.
@Suite("Cluster checkpoints")
struct ClusterCheckpointTests {
    /// What applying `commands` answers and emits, as lines.
    private func run(_ commands: ArraySlice<Command>, on store: Store) -> [String] {
        commands.map { command in
            var made: [String] = []
            var answer: String
            do {
                let outcome = try store.execute(command) { effects in
                    made = effects.madeEvents.map {
                        "\($0.log) \($0.event.id) \(String(decoding: $0.event.data, as: UTF8.self))"
                    }
                }
                answer = "\(outcome)"
                // A class's description prints its properties in hash order: compare its JSON.
                if case .classDefined(let snapshot, let created) = outcome {
                    answer =
                        "class \(created) \(snapshot.revision) \(snapshot.objectCount) \(String(decoding: JSON.object(snapshot.schema.json).encoded(), as: UTF8.self))"
                }
            } catch {
                answer = "refused \(error)"
            }
            return ([answer] + made).joined(separator: "\n")
        }
    }

    @Test("a replica loaded from a checkpoint answers and emits exactly like the original", arguments: [7, 1234])
    func loadedReplicaContinuesExactly(seed: UInt64) throws {
        var generator = CommandGenerator(seed: seed)
        // On a cluster every stream is held by a node: a checkpoint keeps holders, not a single
        // server's own stream count.
        let commands = generator.commands(3_000).map { command in
            switch command.action {
            case .openStream(let observer, nil):
                Command(
                    time: command.time, .openStream(observer: observer, holder: "n0#1"), as: .server, by: command.by)
            case .closeStream(let observer, nil):
                Command(
                    time: command.time, .closeStream(observer: observer, holder: "n0#1"), as: .server, by: command.by)
            default: command
            }
        }
        let original = Store()
        _ = run(commands[..<1_500], on: original)
        let checkpoint = original.fullCheckpoint(position: 1_500)
        var image = PersistedImage(
            rows: checkpoint.rows(), revision: checkpoint.revision, adminLastEventID: checkpoint.adminLastEventID,
            clock: checkpoint.clock, checkpoint: checkpoint.position)
        image.exact = true
        image.counters = checkpoint.counters
        let replica = Store()
        try replica.load(image)
        let expected = run(commands[1_500...], on: original)
        let actual = run(commands[1_500...], on: replica)
        for (index, (want, got)) in zip(expected, actual).enumerated() where want != got {
            Issue.record("command \(1_500 + index) differs:\n\(want)\n---\n\(got)")
            return
        }
        #expect(expected.count == 1_500)
    }
}
