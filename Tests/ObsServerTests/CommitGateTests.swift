import ObservationCore
import Testing

@testable import ObsServer

/// The commit gate without a committer: `reply(_:whenDurable:)` as a durable write's answer, `open`, `refuse`
/// as the committer.
@Suite("CommitGate: answers wait until what they report is durable")
struct CommitGateTests {
    private let written = HTTPResponse(status: 200, contentType: "", body: [])

    @Test("a ticket at or below the durable position is answered at once", arguments: [1, 9, 10])
    func durableTicketPasses(ticket: Int) {
        let gate = CommitGate(durable: 10)
        #expect(status(gate.reply(written, whenDurable: ticket)) == 200)
        #expect(gate.oldestWait == nil, "nothing waits")
    }

    @Test("open answers only the tickets up to the position, and never goes back")
    func openUpToThePosition() throws {
        let gate = CommitGate(durable: 0)
        var answers: [DeferredAnswer] = []
        for ticket in [3, 1, 2, 5] { answers.append(try #require(deferred(gate.reply(written, whenDurable: ticket)))) }
        for answer in answers { #expect(answer.takeOrPark(suspend: { true }, connection: Counter()) == nil) }
        #expect(gate.oldestWait != nil)
        gate.open(through: 3)
        #expect(answers.map { status($0.take()) } == [200, 200, 200, nil])
        gate.open(through: 2)
        #expect(gate.durable == 3, "never back")
        gate.open(through: 5)
        #expect(status(answers[3].take()) == 200)
        #expect(gate.oldestWait == nil)
    }

    @Test("a rolled-back range is refused, parked or still on its way; later positions are new changes")
    func refusedRange() throws {
        let gate = CommitGate(durable: 10)
        let parked = try #require(deferred(gate.reply(written, whenDurable: 12)))
        _ = parked.takeOrPark(suspend: { true }, connection: Counter())
        gate.refuse(through: 13, with: APIError(status: 503, code: "unavailable", message: "undone"))
        #expect(status(parked.take()) == 503)
        #expect(status(gate.reply(written, whenDurable: 13)) == 503, "a late answer of the range")
        let later = try #require(deferred(gate.reply(written, whenDurable: 14)))
        gate.open(through: 14)
        #expect(status(later.take()) == 200)
    }

    @Test("a late answer of a rolled-back range stays refused after later commits pass its position")
    func refusedBeforeDurable() {
        let gate = CommitGate(durable: 10)
        gate.refuse(through: 12, with: APIError(status: 503, code: "unavailable", message: "undone"))
        gate.open(through: 20)
        #expect(status(gate.reply(written, whenDurable: 11)) == 503)
        #expect(status(gate.reply(written, whenDurable: 13)) == 200)
    }
}

/// The deferred answer of a `later` reply (nil: the reply is not `later`).
func deferred(_ reply: Reply) -> DeferredAnswer? {
    guard case .later(let answer) = reply else { return nil }
    return answer
}
