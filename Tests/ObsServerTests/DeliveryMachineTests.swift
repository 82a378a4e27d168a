import ObservationCore
import Testing

@testable import ObsServer

@Suite("DeliveryMachine: one observer's deliveries, without a network")
struct DeliveryMachineTests {
    private let t0 = Timestamp(milliseconds: 1_000_000)

    private func batch(_ through: Int, count: Int = 1, rebuildAfter: Int? = nil) -> DeliveryMachine.Batch {
        DeliveryMachine.Batch(
            through: through, count: count, rebuildAfter: rebuildAfter, body: Array("b\(through)".utf8))
    }

    private func at(_ milliseconds: Int64) -> Timestamp { Timestamp(milliseconds: t0.milliseconds + milliseconds) }

    @Test("idle: reads after the cursor; nothing there: waits for the log")
    func idle() {
        var machine = DeliveryMachine(acknowledged: 7)
        #expect(machine.poll(now: t0) == .read(after: 7, rebuildAfter: nil))
        #expect(machine.read(nil) == .waitForEvents(after: 7))
        #expect(machine.phase == .idle)
        #expect(machine.stateName == "idle")
    }

    @Test("a batch goes out; a 2xx moves the cursor to its last event, and the next is read")
    func acknowledged() {
        var machine = DeliveryMachine(acknowledged: 0)
        #expect(machine.read(batch(3, count: 3)) == .send(batch(3, count: 3), attempt: 1))
        #expect(machine.stateName == "sending")
        #expect(machine.poll(now: t0) == .none)  // one request at a time
        #expect(machine.read(batch(5)) == .none)
        #expect(machine.completed(attempt: 1, .status(204), now: t0, random: 0.5) == .acknowledge(through: 3))
        #expect(machine.acknowledged == 3)
        #expect(machine.lastStatus == 204)
        #expect(machine.poll(now: t0) == .read(after: 3, rebuildAfter: nil))
    }

    @Test("a failure keeps the cursor and sends the same batch again after the backoff")
    func retried() {
        var machine = DeliveryMachine(acknowledged: 0)
        let first = batch(2, count: 2)
        _ = machine.read(first)
        #expect(machine.completed(attempt: 1, .status(500), now: t0, random: 0.5) == .wake(at: at(500)))
        #expect(machine.stateName == "retrying")
        #expect(machine.acknowledged == 0)
        #expect(machine.lastStatus == 500)
        #expect(machine.lastError == "status 500")
        #expect(machine.nextAttemptAt == at(500))
        #expect(machine.poll(now: at(499)) == .wake(at: at(500)))
        #expect(machine.read(batch(9)) == .none)  // new events wait behind it
        #expect(machine.poll(now: at(500)) == .send(first, attempt: 2))
        #expect(machine.attempts == 2)
        #expect(machine.completed(attempt: 2, .failed("timeout"), now: at(600), random: 0.5) == .wake(at: at(1600)))
        #expect(machine.lastStatus == nil)
        #expect(machine.lastError == "timeout")
        #expect(machine.poll(now: at(1600)) == .send(first, attempt: 3))
        #expect(machine.completed(attempt: 3, .status(200), now: at(1700), random: 0.5) == .acknowledge(through: 2))
        #expect(machine.acknowledged == 2)
        #expect(machine.attempts == 0)
        #expect(machine.lastError == nil)
    }

    @Test(
        "backoff: 0.5 s doubling to 60 s, ±20 % jitter",
        arguments: [(1, 500), (2, 1000), (3, 2000), (8, 60_000), (40, 60_000)])
    func backoff(attempt: Int, base: Int64) {
        #expect(DeliveryMachine.delay(afterAttempt: attempt, random: 0.5) == base)
        #expect(DeliveryMachine.delay(afterAttempt: attempt, random: 0) == base * 8 / 10)
        #expect(DeliveryMachine.delay(afterAttempt: attempt, random: 1) == base * 12 / 10)
    }

    @Test("a 2xx that comes for an attempt no longer out (after its timeout) changes nothing")
    func lateAnswer() {
        var machine = DeliveryMachine(acknowledged: 4)
        _ = machine.read(batch(6, count: 2))
        #expect(machine.completed(attempt: 1, .failed("timeout"), now: t0, random: 0.5) == .wake(at: at(500)))
        #expect(machine.completed(attempt: 1, .status(200), now: at(100), random: 0.5) == .none)
        #expect(machine.acknowledged == 4)
        #expect(machine.poll(now: at(500)) == .send(batch(6, count: 2), attempt: 2))
        #expect(machine.completed(attempt: 1, .status(200), now: at(510), random: 0.5) == .none)
        #expect(machine.completed(attempt: 2, .status(201), now: at(520), random: 0.5) == .acknowledge(through: 6))
        #expect(machine.acknowledged == 6)
    }

    @Test("a reset batch (the buffer overflowed while the URL failed) moves the cursor past what it covers")
    func overflow() {
        var machine = DeliveryMachine(acknowledged: 3)
        _ = machine.read(batch(4))
        _ = machine.completed(attempt: 1, .status(503), now: t0, random: 0.5)
        // The log evicts events 5…1020 meanwhile: the held batch is still sent again as it was.
        #expect(machine.poll(now: at(500)) == .send(batch(4), attempt: 2))
        #expect(machine.completed(attempt: 2, .status(200), now: at(501), random: 0.5) == .acknowledge(through: 4))
        // The next read finds the gap: `reset` and the rebuild, covering up to the log's last id.
        #expect(machine.poll(now: at(502)) == .read(after: 4, rebuildAfter: nil))
        let reset = batch(2000, count: 100, rebuildAfter: 99)
        #expect(machine.read(reset) == .send(reset, attempt: 1))
        #expect(machine.completed(attempt: 1, .status(200), now: at(503), random: 0.5) == .acknowledge(through: 2000))
        #expect(machine.poll(now: at(504)) == .read(after: 2000, rebuildAfter: 99))
    }

    @Test("revocation in the middle of a retry ends the deliveries: nothing is sent again")
    func revokedWhileRetrying() {
        var machine = DeliveryMachine(acknowledged: 0)
        _ = machine.read(batch(1))
        _ = machine.completed(attempt: 1, .status(500), now: t0, random: 0.5)
        machine.end()
        #expect(machine.phase == .ended)
        #expect(machine.poll(now: at(10_000)) == .none)
        #expect(machine.read(batch(2)) == .none)
        #expect(machine.completed(attempt: 1, .status(200), now: at(10_001), random: 0.5) == .none)
        #expect(machine.acknowledged == 0)
    }

    @Test("revocation while a request is out: its answer is forgotten")
    func revokedWhileSending() {
        var machine = DeliveryMachine(acknowledged: 0)
        _ = machine.read(batch(1))
        machine.end()
        #expect(machine.completed(attempt: 1, .status(200), now: t0, random: 0.5) == .none)
        #expect(machine.poll(now: t0) == .none)
    }
}
