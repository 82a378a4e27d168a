import ObservationCore
import Testing

@testable import ObsServer

/// The commit gate without a committer: answers parked on tickets, released as positions
/// become durable. (Refusals after a rollback: `CommitTimeoutTests`.)
@Suite("CommitGate: answers wait until what they report is durable")
struct CommitGateTests {
    @Test("a ticket at or below the durable position passes at once, parking nothing", arguments: [1, 9, 10])
    func durableTicketPasses(ticket: Int) {
        let gate = CommitGate(durable: 10)
        var parked = false
        #expect(gate.hold(Released(into: Log()), until: ticket) { parked = true }.name == "passed")
        #expect(!parked)
        #expect(gate.oldestWait == nil)
    }

    @Test("a later ticket parks (park runs once, under the hold) until opened")
    func laterTicketParks() {
        let gate = CommitGate(durable: 10)
        var parks = 0
        let log = Log()
        #expect(gate.hold(Released(11, into: log), until: 11) { parks += 1 }.name == "parked")
        #expect(parks == 1 && log.entries.isEmpty)
        #expect(gate.oldestWait != nil)
    }

    @Test("open releases only the tickets up to the position, in the order they parked")
    func openReleasesInOrder() {
        let gate = CommitGate(durable: 0)
        let log = Log()
        for ticket in [3, 7, 1, 5, 2] { _ = gate.hold(Released(ticket, into: log), until: ticket) {} }
        gate.open(through: 3)
        #expect(log.entries == ["3 passed", "1 passed", "2 passed"])
        #expect(gate.durable == 3)
        gate.open(through: 2)
        #expect(gate.durable == 3, "never goes back")
        #expect(log.entries.count == 3)
        gate.open(through: 7)
        #expect(log.entries.suffix(2) == ["7 passed", "5 passed"])
        #expect(gate.oldestWait == nil)
        gate.open(through: 8)
        #expect(log.entries.count == 5, "each answer is released once")
    }

    @Test("abandon releases every parked answer as abandoned; later tickets are abandoned, durable ones pass")
    func abandon() {
        let gate = CommitGate(durable: 4)
        let log = Log()
        for ticket in [6, 5] { _ = gate.hold(Released(ticket, into: log), until: ticket) {} }
        gate.abandon()
        #expect(log.entries == ["6 abandoned", "5 abandoned"])
        var parked = false
        #expect(gate.hold(Released(into: log), until: 7) { parked = true }.name == "abandoned")
        #expect(!parked)
        #expect(gate.hold(Released(into: log), until: 4) {}.name == "passed")
        gate.open(through: 10)
        #expect(log.entries.count == 2, "nothing left to release")
    }
}

/// Where released answers write what they got, in order.
private final class Log: Sendable {
    private let lines = Locked<[String]>([])
    var entries: [String] { lines.withLock { $0 } }
    func append(_ line: String) { lines.withLock { $0.append(line) } }
}

/// A held answer that logs its ticket and verdict.
private final class Released: HeldAnswer, Sendable {
    let ticket: Int
    let log: Log

    init(_ ticket: Int = 0, into log: Log) {
        self.ticket = ticket
        self.log = log
    }

    func release(_ verdict: GateVerdict) { log.append("\(ticket) \(verdict.name)") }
}

extension GateVerdict {
    fileprivate var name: String {
        switch self {
        case .passed: "passed"
        case .parked: "parked"
        case .refused: "refused"
        case .abandoned: "abandoned"
        }
    }
}
