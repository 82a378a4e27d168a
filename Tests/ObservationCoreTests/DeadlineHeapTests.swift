import Testing

@testable import ObservationCore

@Suite("Deadline heap")
struct DeadlineHeapTests {
    @Test("deadlines come out earliest first; scheduling again moves, cancelling removes")
    func order() {
        var heap = DeadlineHeap<Int>()
        for (id, deadline) in [("a", 50), ("b", 10), ("c", 30), ("d", 40), ("e", 20)] {
            heap.schedule(id, at: deadline)
        }
        heap.schedule("a", at: 5)  // earlier
        heap.schedule("b", at: 45)  // later
        heap.cancel("c")
        heap.cancel("missing")
        var popped: [String] = []
        while let next = heap.popFirst() { popped.append(next.id) }
        #expect(popped == ["a", "e", "d", "b"])
        #expect(heap.count == 0)
    }

    @Test("equal deadlines come out in id order, whatever order they went in", arguments: [1, 2, 3])
    func ties(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var heap = DeadlineHeap<Int>()
        let ids = (0..<50).map { "obs_\($0 + 100)" }
        for id in ids.shuffled(using: &random) { heap.schedule(id, at: 7) }
        for id in ids.shuffled(using: &random).prefix(10) { heap.schedule(id, at: 7) }  // moved to where they were
        var popped: [String] = []
        while let next = heap.popFirst() { popped.append(next.id) }
        #expect(popped == ids)
    }

    @Test("one deadline per id, however often it is scheduled, and memory to match")
    func bounded() {
        var heap = DeadlineHeap<Int>()
        for step in 0..<10_000 { heap.schedule("id\(step % 7)", at: 10_000 - step) }
        #expect(heap.count == 7)
        #expect(heap.stored <= 2 * 7 + 16, "stale entries are dropped")
        var previous = Int.min
        while let next = heap.popFirst() {
            #expect(next.deadline >= previous)
            previous = next.deadline
        }
    }

    @Test("random schedules and cancels keep the heap in order", arguments: [1, 2, 3])
    func randomised(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        var heap = DeadlineHeap<Int>()
        var expected: [String: Int] = [:]
        for _ in 0..<2_000 {
            let id = "o\(Int.random(in: 0..<50, using: &generator))"
            if Int.random(in: 0..<4, using: &generator) == 0 {
                heap.cancel(id)
                expected[id] = nil
            } else {
                let deadline = Int.random(in: 0..<1_000, using: &generator)
                heap.schedule(id, at: deadline)
                expected[id] = deadline
            }
        }
        #expect(heap.count == expected.count)
        var drained: [(String, Int)] = []
        while let next = heap.popFirst() { drained.append((next.id, next.deadline)) }
        #expect(drained.map(\.1) == drained.map(\.1).sorted())
        #expect(Dictionary(uniqueKeysWithValues: drained) == expected)
    }
}
