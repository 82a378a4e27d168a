import Testing

@testable import ObsServer

/// The stream connection's state machine, without a socket: every transition, and the races
/// the lock used to close by calling libmicrohttpd under it.
@Suite("StreamConnectionState: who has a stream's socket, and what to do after the lock")
struct StreamConnectionStateTests {
    /// One event, as the connection reports it.
    enum Event: Equatable, Sendable {
        case readerLooks, readerFoundNothing, suspended, wake, stop, abort
        case writerLooks, writerFoundNothing, bodyEnded, writeFailed, writeCutShort
        case watching(token: UInt64, unsent: [UInt8])
        case roomCame, freed
    }

    /// What an event returned.
    enum Outcome: Equatable, Sendable {
        case step(StreamConnectionState.ReadStep)
        case action(StreamConnectionState.Action)
        case first(Bool)
    }

    struct Transition: Sendable, CustomTestStringConvertible {
        let testDescription: String
        let from: StreamConnectionState
        let event: Event
        let outcome: Outcome
        let to: StreamConnectionState
    }

    @Test("each event from each state returns its action and leaves the next state", arguments: transitions)
    func transition(_ transition: Transition) {
        var state = transition.from
        let outcome = state.apply(transition.event)
        #expect(outcome == transition.outcome)
        #expect(state == transition.to)
    }

    // MARK: - Races

    @Test("a wake while the reader parks is written by the reader once the connection is suspended")
    func wakeWhileParking() {
        var state = StreamConnectionState(directWrites: true)
        #expect(state.readerLooks() == .read)
        #expect(state.readerFoundNothing() == .suspend)
        #expect(state.wake() == .none, "not suspended yet: nothing may write or resume")
        #expect(state.suspended() == .write)
        #expect(state.phase == .writing)
        #expect(state.wake() == .none, "one writer")
        #expect(state.writerLooks() == .write)
        #expect(state.writerFoundNothing() == .none)
        #expect(state.phase == .parked)
    }

    @Test(
        "stop, abort or a wake (without direct writes) while the reader parks resume only after the suspend",
        arguments: [Event.stop, .abort, .wake])
    func resumeWaitsForSuspend(_ event: Event) {
        var state = StreamConnectionState(directWrites: false)
        #expect(state.readerFoundNothing() == .suspend)
        let outcome = state.apply(event)
        #expect(outcome == .action(.none))
        #expect(state.suspended() == .resume)
        #expect(state.phase == .reading)
        #expect(state.wake() == .none)
        #expect(state.abort() != .resume, "resumed once")
    }

    @Test("a wake while the reader looks makes it look again instead of parking")
    func wakeWhileReading() {
        var state = StreamConnectionState(directWrites: true)
        #expect(state.readerLooks() == .read)
        #expect(state.wake() == .none)
        #expect(state.readerFoundNothing() == .read)
        #expect(state.readerLooks() == .read)
        #expect(state.readerFoundNothing() == .suspend)
    }

    @Test("an abort while writing is left to the writer, which shuts the socket down, then resumes")
    func abortWhileWriting() {
        var state = StreamConnectionState(directWrites: true, phase: .parked)
        #expect(state.wake() == .write)
        #expect(state.abort() == .none, "the writer has the socket")
        #expect(state.abort() == .none, "once")
        #expect(state.wake() == .none)
        #expect(state.writerLooks() == .shutdownAndResume)
        #expect(state.phase == .reading && state.ending == .aborted)
        #expect(state.readerLooks() == .end)
    }

    @Test("an abort while the writer registers for room is left to it: it unwatches, shuts down, resumes")
    func abortWhileWatching() {
        var state = StreamConnectionState(directWrites: true, phase: .writing)
        #expect(state.writeCutShort() == .watchWritable)
        #expect(state.abort() == .none)
        #expect(state.watching(token: 4, unsent: [1]) == .unwatchShutdownAndResume(token: 4))
        #expect(state.roomCame() == .none, "a handler still in flight finds nothing to do")
    }

    @Test("room that comes before the writer recorded its watch is not lost: the writer goes on")
    func roomBeforeWatching() {
        var state = StreamConnectionState(directWrites: true, phase: .writing)
        #expect(state.writeCutShort() == .watchWritable)
        #expect(state.roomCame() == .none)
        #expect(state.watching(token: 9, unsent: [1, 2]) == .unwatchAndWrite(token: 9, unsent: [1, 2]))
        #expect(state.phase == .writing)
    }

    @Test("room, then an abort: the abort is left to the writer the room made")
    func roomThenAbort() {
        var state = StreamConnectionState(directWrites: true, phase: .waitingForRoom(token: 2, unsent: [7]))
        #expect(state.roomCame() == .unwatchAndWrite(token: 2, unsent: [7]))
        #expect(state.abort() == .none)
        #expect(state.writerLooks() == .shutdownAndResume)
    }

    @Test("stop after abort stays aborted; abort after stop aborts", arguments: [true, false])
    func stopAndAbort(abortFirst: Bool) {
        var state = StreamConnectionState(directWrites: true, phase: .parked)
        if abortFirst {
            #expect(state.abort() == .resume)
            #expect(state.stop() == .none)
        } else {
            #expect(state.stop() == .resume)
            #expect(state.abort() == .shutdownSocket, "libmicrohttpd has it again")
        }
        #expect(state.ending == .aborted)
    }

    @Test("a second free is ignored, and nothing touches a freed connection")
    func doubleFree() {
        var state = StreamConnectionState(directWrites: true)
        let first = state.freed()
        let second = state.freed()
        #expect(first && !second)
        #expect(state.abort() == .none)
        #expect(state.stop() == .none)
        #expect(state.wake() == .none)
        #expect(state.roomCame() == .none)
        #expect(state.phase == .finished && state.ending == .none)
    }

    @Test("a stop drains what is pending before it ends the stream")
    func stopDrains() {
        var state = StreamConnectionState(directWrites: true, phase: .writing)
        #expect(state.stop() == .none)
        #expect(state.writerFoundNothing() == .write, "woken by the stop: look again")
        #expect(state.writerLooks() == .write)
        #expect(state.writerFoundNothing() == .resume)
        #expect(state.readerLooks() == .read)
        #expect(state.readerFoundNothing() == .end)
    }

    @Test("random interleavings never resume an unsuspended connection, nor write it from two threads")
    func interleavings() {
        for seed in UInt64(1)...2_000 {
            var model = InterleavingModel(seed: seed, directWrites: seed % 5 != 0)
            model.run(steps: 60)
            #expect(model.violations.isEmpty, "seed \(seed): \(model.violations)")
            if !model.violations.isEmpty { return }
        }
    }
}

extension StreamConnectionState {
    mutating func apply(_ event: StreamConnectionStateTests.Event) -> StreamConnectionStateTests.Outcome {
        switch event {
        case .readerLooks: .step(readerLooks())
        case .readerFoundNothing: .step(readerFoundNothing())
        case .suspended: .action(suspended())
        case .wake: .action(wake())
        case .stop: .action(stop())
        case .abort: .action(abort())
        case .writerLooks: .action(writerLooks())
        case .writerFoundNothing: .action(writerFoundNothing())
        case .bodyEnded: .action(bodyEnded())
        case .writeFailed: .action(writeFailed())
        case .writeCutShort: .action(writeCutShort())
        case .watching(let token, let unsent): .action(watching(token: token, unsent: unsent))
        case .roomCame: .action(roomCame())
        case .freed: .first(freed())
        }
    }
}
