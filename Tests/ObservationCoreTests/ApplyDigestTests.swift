import Testing

@testable import ObservationCore

/// The digest cluster nodes compare: equal for replicas that applied the same commands, and
/// different as soon as one of them made another event or revision.
@Suite("Apply digest")
struct ApplyDigestTests {
    /// Applies `commands` to a new store; returns the digest after each.
    func digests(_ commands: [Command]) -> [ApplyDigest] {
        let store = Store()
        var digest = ApplyDigest()
        var trail: [ApplyDigest] = []
        for command in commands {
            _ = try? store.execute(command) { effects in digest.add(effects) }
            trail.append(digest)
        }
        return trail
    }

    @Test("replicas of the same commands agree at every position", arguments: [3, 42])
    func replicasAgree(seed: UInt64) {
        var generator = CommandGenerator(seed: seed)
        let commands = generator.commands(1_500)
        let first = digests(commands)
        #expect(first == digests(commands))
        #expect(Set(first.map(\.value)).count > commands.count / 2, "the digest moves with what is applied")
    }

    @Test("one changed command changes the digest from there on")
    func divergenceShows() throws {
        var generator = CommandGenerator(seed: 5)
        var commands = generator.commands(600)
        let honest = digests(commands)
        // Find a setValue whose value can be altered, and alter it.
        let index = try #require(
            commands.indices.dropFirst(300).first { index in
                if case .setValue = commands[index].action { return true } else { return false }
            })
        guard case .setValue(let object, let keyPath, _, let ifRevision) = commands[index].action else { return }
        commands[index] = Command(
            time: commands[index].time,
            .setValue(object: object, keyPath: keyPath, value: .string("altered"), ifRevision: ifRevision))
        let altered = digests(commands)
        #expect(Array(altered[..<index]) == Array(honest[..<index]))
        let firstDifference = try #require(altered.indices.first { altered[$0] != honest[$0] })
        #expect(firstDifference >= index)
        #expect(altered.last != honest.last)
    }

    @Test("hex form round-trips; anything else is refused")
    func hex() {
        let digest = ApplyDigest(value: 0x00ab_cdef_0123_4567)
        #expect(digest.hex == "00abcdef01234567")
        #expect(ApplyDigest(hex: digest.hex) == digest)
        #expect(ApplyDigest().hex.count == 16)
        for bad in ["", "abc", "00abcdef0123456g", "00abcdef012345678"] { #expect(ApplyDigest(hex: bad) == nil) }
    }
}
