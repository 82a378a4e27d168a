import ObservationCore
import Testing

@testable import ObsServer

/// A deferred answer without a daemon: `hold` as the daemon parks, `resolve` as whoever knows.
@Suite("DeferredAnswer: an answer known later than its request")
struct DeferredAnswerTests {
    @Test("resolved before it is held: hold hands the producer over and parks nothing")
    func resolveBeforeHold() throws {
        let answer = DeferredAnswer()
        answer.resolve(with: status(204))
        let parks = Counter()
        let releases = Counter()
        let producer = answer.hold(park: { parks.add() }, release: { releases.add() })
        let produce = try #require(producer)
        #expect(produce()?.status == 204)
        #expect(parks.value == 0 && releases.value == 0)
        #expect(answer.take() == nil, "taken by hold")
    }

    @Test("held, then resolved: parked once under hold, released once, then take has the producer")
    func holdThenResolve() throws {
        let answer = DeferredAnswer()
        let parks = Counter()
        let releases = Counter()
        #expect(answer.hold(park: { parks.add() }, release: { releases.add() }) == nil)
        #expect(parks.value == 1 && releases.value == 0)
        #expect(answer.take() == nil, "nothing to take before the answer is known")
        answer.resolve(with: status(201))
        #expect(releases.value == 1)
        let produce = try #require(answer.take())
        #expect(produce()?.status == 201)
        #expect(answer.take() == nil, "taken once")
    }

    @Test("a second resolve is ignored, parked or not", arguments: [true, false])
    func secondResolveIgnored(held: Bool) throws {
        let answer = DeferredAnswer()
        let releases = Counter()
        if held { _ = answer.hold(park: {}, release: { releases.add() }) }
        answer.resolve(with: status(200))
        answer.resolve(with: status(500))
        #expect(releases.value == (held ? 1 : 0))
        let producer = held ? answer.take() : answer.hold(park: {}, release: {})
        let produce = try #require(producer)
        #expect(produce()?.status == 200, "the first answer wins")
    }

    @Test("a producer that returns nil closes the connection unanswered")
    func nilProducer() throws {
        let answer = DeferredAnswer()
        _ = answer.hold(park: {}, release: {})
        answer.resolve { nil }
        let produce = try #require(answer.take())
        #expect(produce() == nil)
    }

    @Test("the hang-up handler: none unless asked for; the one set is the one run")
    func hangupHandler() throws {
        let answer = DeferredAnswer()
        #expect(answer.hangupHandler == nil, "not asked for: the daemon does not watch the socket")
        let hangups = Counter()
        answer.onHangup { hangups.add() }
        let handler = try #require(answer.hangupHandler)
        handler()
        #expect(hangups.value == 1)
        answer.resolve(with: status(204))
        #expect(answer.hangupHandler != nil, "kept: the daemon reads it when it parks")
    }
}

/// An answer with only a status.
private func status(_ code: Int) -> HTTPResponse {
    HTTPResponse(status: code, contentType: "", body: [])
}

/// Counts calls from any thread.
private final class Counter: Sendable {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
}
