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
        let commands = generator.commands(600)
        let honest = digests(commands)
        // The admin's writes of a string key, altered one at a time: the first that applied (its
        // object still there) changes the digest from its own place on, and nothing before it.
        let candidates = commands.indices.dropFirst(300).filter { index in
            guard case .setValue(_, "name", _, nil) = commands[index].action else { return false }
            return commands[index].principal == .admin
        }
        var shown = false
        for index in candidates.prefix(20) {
            guard case .setValue(let object, let keyPath, _, let ifRevision) = commands[index].action else { continue }
            var changed = commands
            changed[index] = Command(
                time: commands[index].time,
                .setValue(object: object, keyPath: keyPath, value: .string("altered"), ifRevision: ifRevision),
                as: .admin)
            let altered = digests(changed)
            #expect(Array(altered[..<index]) == Array(honest[..<index]))
            guard let firstDifference = altered.indices.first(where: { altered[$0] != honest[$0] }) else { continue }
            #expect(firstDifference >= index)
            #expect(altered.last != honest.last)
            shown = true
            break
        }
        #expect(shown, "no altered write changed the digest")
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
