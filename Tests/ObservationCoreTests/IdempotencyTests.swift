import Testing

@testable import ObservationCore

/// Idempotency keys in the core (section 7.3): a key keeps its answer for 10 minutes of
/// command time, a bounded number of keys is kept, and a replay changes nothing.
@Suite("Idempotency keys")
struct IdempotencyTests {
    /// Command times are after the wall-clock time the fixtures were made at.
    let base = Timestamp.now().milliseconds + 60_000

    func setValue(_ value: Int, key: String, request: String = "r", at milliseconds: Int64, in store: Store) throws
        -> Outcome
    {
        try store.execute(
            Command(
                time: Timestamp(milliseconds: base + milliseconds),
                .setValue(object: "a", keyPath: "n", value: .int(value), ifRevision: nil), as: .admin,
                idempotency: IdempotencyClaim(key: key, fingerprint: request)))
    }

    func isReplay(_ outcome: Outcome) -> Bool {
        if case .replayed = outcome { true } else { false }
    }

    @Test("a replay takes no revision; the key is free again after 10 minutes of command time")
    func window() throws {
        let store = Store()
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        #expect(try !isReplay(setValue(1, key: "k", at: 1_000, in: store)))
        let revision = store.stats().revision
        #expect(try isReplay(setValue(1, key: "k", at: 2_000, in: store)))
        #expect(store.stats().revision == revision)
        #expect(throws: CoreError.self) { try setValue(2, key: "k", request: "other", at: 3_000, in: store) }
        #expect(try isReplay(setValue(1, key: "k", at: 600_999, in: store)), "still held just before 10 minutes")
        #expect(try !isReplay(setValue(1, key: "k", at: 601_000, in: store)), "applied again after them")
        #expect(store.stats().revision == revision + 1)
    }

    @Test("past the limit the oldest keys go first")
    func bounded() throws {
        let store = Store(limits: StoreLimits(maxIdempotencyKeys: 3))
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        for index in 0..<5 { _ = try setValue(index, key: "k\(index)", at: Int64(1_000 + index), in: store) }
        let held = store.state.withLock { $0.idempotency.keys }
        #expect(held == ["k2", "k3", "k4"])
        #expect(try !isReplay(setValue(0, key: "k0", at: 2_000, in: store)), "k0 left early: applied again")
        #expect(try isReplay(setValue(4, key: "k4", at: 2_001, in: store)))
    }
}
