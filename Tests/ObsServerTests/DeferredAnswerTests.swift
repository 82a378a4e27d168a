import ObservationCore
import Testing

@testable import ObsServer

/// A deferred answer without a daemon: `takeOrPark` as the daemon parks, `resolve` as whoever knows.
@Suite("DeferredAnswer: an answer known later than its request")
struct DeferredAnswerTests {
    @Test("resolved before it is parked: takeOrPark hands the answer over and parks nothing")
    func resolveBeforePark() throws {
        let answer = DeferredAnswer()
        answer.resolve(with: reply(204))
        let parks = Counter()
        let releases = Counter()
        let taken = answer.takeOrPark(
            suspend: {
                parks.add(); return true
            }, connection: releases)
        #expect(status(taken) == 204)
        #expect(parks.value == 0 && releases.value == 0)
        #expect(answer.take() == nil, "taken by takeOrPark")
    }

    @Test("parked, then resolved: suspended once under takeOrPark, resumed once, then take has the answer")
    func parkThenResolve() throws {
        let answer = DeferredAnswer()
        let parks = Counter()
        let releases = Counter()
        #expect(
            answer.takeOrPark(
                suspend: {
                    parks.add(); return true
                }, connection: releases) == nil)
        #expect(parks.value == 1 && releases.value == 0)
        #expect(answer.take() == nil, "nothing to take before the answer is known")
        answer.resolve(with: reply(201))
        #expect(releases.value == 1)
        #expect(status(answer.take()) == 201)
        #expect(answer.take() == nil, "taken once")
    }

    @Test("a producer runs when the answer is taken (on the daemon's worker), not when it is resolved")
    func producerRunsAtTake() {
        let answer = DeferredAnswer()
        _ = answer.takeOrPark(suspend: { true }, connection: Counter())
        let runs = Counter()
        answer.resolve {
            runs.add()
            return reply(200)
        }
        #expect(runs.value == 0)
        #expect(status(answer.take()) == 200 && runs.value == 1)
    }

    @Test("a second resolve is ignored, parked or not", arguments: [true, false])
    func secondResolveIgnored(parked: Bool) throws {
        let answer = DeferredAnswer()
        let releases = Counter()
        if parked { _ = answer.takeOrPark(suspend: { true }, connection: releases) }
        answer.resolve(with: reply(200))
        answer.resolve(with: reply(500))
        #expect(releases.value == (parked ? 1 : 0))
        let taken = parked ? answer.take() : answer.takeOrPark(suspend: { true }, connection: Counter())
        #expect(status(taken) == 200, "the first answer wins")
    }

    @Test("an answer of .close closes the connection unanswered", arguments: [true, false])
    func closeAnswer(produced: Bool) throws {
        let answer = DeferredAnswer()
        _ = answer.takeOrPark(suspend: { true }, connection: Counter())
        if produced { answer.resolve { .close } } else { answer.resolve(with: .close) }
        guard case .close? = answer.take() else {
            Issue.record("the answer taken must be .close")
            return
        }
    }

    @Test("a park the daemon refuses (it is stopping) closes unanswered, and the answer is dropped")
    func refusedPark() {
        let answer = DeferredAnswer()
        let resumes = Counter()
        guard case .close? = answer.takeOrPark(suspend: { false }, connection: resumes) else {
            Issue.record("a refused park must close the connection unanswered")
            return
        }
        answer.resolve(with: reply(200))
        #expect(resumes.value == 0, "nothing to resume: it never parked")
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
        answer.resolve(with: reply(204))
        #expect(answer.hangupHandler != nil, "kept: the daemon reads it when it parks")
    }
}

/// An answer with only a status.
func reply(_ code: Int) -> Reply {
    .now(HTTPResponse(status: code, contentType: "", body: []))
}

/// The status of a reply that is `now` (nil: none, or not `now`).
func status(_ reply: Reply?) -> Int? {
    guard case .now(let response)? = reply else { return nil }
    return response.status
}

/// Counts calls from any thread; as a parked connection, counts its resumes.
final class Counter: ParkedConnection {
    private let count = Locked(0)
    var value: Int { count.withLock { $0 } }
    func add() { count.withLock { $0 += 1 } }
    func resume() { add() }
}
