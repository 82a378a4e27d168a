import Testing

@testable import ObservationCore

@Suite("Sorted id index")
struct SortedIDsTests {
    @Test("random inserts and removals page exactly like a sorted set")
    func matchesReference() {
        var ids = SortedIDs()
        var reference = Set<String>()
        var generator = SeededGenerator(seed: 42)
        for _ in 0..<20_000 {
            let id = "id\(Int.random(in: 0..<5000, using: &generator))"
            if Bool.random(using: &generator) {
                ids.insert(id)
                reference.insert(id)
            } else {
                ids.remove(id)
                reference.remove(id)
            }
        }
        #expect(ids.count == reference.count)
        var paged: [String] = []
        var cursor: String?
        while true {
            let page = ids.page(after: cursor, limit: 77)
            paged += page.ids
            guard page.more, let last = page.ids.last else { break }
            cursor = last
        }
        #expect(paged == reference.sorted())
    }

    @Test("a cursor that is not in the set starts after where it would be")
    func cursorNotPresent() {
        var ids = SortedIDs()
        for id in ["b", "d", "f"] { ids.insert(id) }
        #expect(ids.page(after: "c", limit: 10).ids == ["d", "f"])
        #expect(ids.page(after: "z", limit: 10).ids == [])
        #expect(ids.page(after: nil, limit: 2) == (["b", "d"], true))
    }
}

/// A small deterministic generator (SplitMix64) so failures reproduce.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
