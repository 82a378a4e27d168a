@testable import ObsServer

/// Every transition of `StreamConnectionState`: (state, event) → (what to do, next state).
extension StreamConnectionStateTests {
    static let transitions: [Transition] = readerTransitions + anyThreadTransitions + writerTransitions
}

private typealias State = StreamConnectionState

/// A state with direct writes (`direct: false`: an HTTP version libmicrohttpd alone frames).
private func at(
    _ phase: State.Phase, _ ending: State.Ending = .none, woken: Bool = false, direct: Bool = true
) -> State {
    State(directWrites: direct, phase: phase, ending: ending, woken: woken)
}

private func row(
    _ name: String, _ from: State, _ event: StreamConnectionStateTests.Event,
    _ outcome: StreamConnectionStateTests.Outcome, _ to: State
) -> StreamConnectionStateTests.Transition {
    .init(testDescription: name, from: from, event: event, outcome: outcome, to: to)
}

private let readerTransitions = [
    row(
        "the reader looks: it reads, and forgets a wake", at(.reading, woken: true), .readerLooks,
        .step(.read), at(.reading)),
    row(
        "the reader looks while stopping: it reads", at(.reading, .stopping), .readerLooks,
        .step(.read), at(.reading, .stopping)),
    row(
        "the reader looks after the body ended: the response ends", at(.reading, .ended), .readerLooks,
        .step(.end), at(.reading, .ended)),
    row(
        "the reader looks after an abort: the response ends", at(.reading, .aborted), .readerLooks,
        .step(.end), at(.reading, .aborted)),
    row(
        "nothing to read: the reader parks", at(.reading), .readerFoundNothing,
        .step(.suspend), at(.parking)),
    row(
        "nothing to read but a wake came: it reads again", at(.reading, woken: true), .readerFoundNothing,
        .step(.read), at(.reading, woken: true)),
    row(
        "nothing to read while stopping: the response ends", at(.reading, .stopping), .readerFoundNothing,
        .step(.end), at(.reading, .stopping)),
    row(
        "nothing to read after an abort: the response ends", at(.reading, .aborted), .readerFoundNothing,
        .step(.end), at(.reading, .aborted)),
    row(
        "suspended with nothing new: parked", at(.parking), .suspended,
        .action(.none), at(.parked)),
    row(
        "suspended after a wake: the reader writes", at(.parking, woken: true), .suspended,
        .action(.write), at(.writing, woken: true)),
    row(
        "suspended after a wake, no direct writes: resumed", at(.parking, woken: true, direct: false), .suspended,
        .action(.resume), at(.reading, woken: true, direct: false)),
    row(
        "suspended after a stop: resumed", at(.parking, .stopping, woken: true), .suspended,
        .action(.resume), at(.reading, .stopping, woken: true)),
    row(
        "suspended after an abort: resumed", at(.parking, .aborted), .suspended,
        .action(.resume), at(.reading, .aborted)),
    row(
        "suspended reported twice: nothing", at(.parked), .suspended,
        .action(.none), at(.parked)),
]

private let anyThreadTransitions = [
    row(
        "a wake of a parked connection writes", at(.parked), .wake,
        .action(.write), at(.writing, woken: true)),
    row(
        "a wake of a parked connection without direct writes resumes", at(.parked, direct: false), .wake,
        .action(.resume), at(.reading, woken: true, direct: false)),
    row(
        "a wake while libmicrohttpd has it is only noted", at(.reading), .wake,
        .action(.none), at(.reading, woken: true)),
    row(
        "a wake while the reader parks is only noted", at(.parking), .wake,
        .action(.none), at(.parking, woken: true)),
    row(
        "a wake while writing is only noted", at(.writing), .wake,
        .action(.none), at(.writing, woken: true)),
    row(
        "a wake while waiting for room is only noted", at(.waitingForRoom(token: 1, unsent: [1])), .wake,
        .action(.none), at(.waitingForRoom(token: 1, unsent: [1]), woken: true)),
    row(
        "a wake after the free does nothing", at(.finished), .wake,
        .action(.none), at(.finished, woken: true)),
    row(
        "a stop of a parked connection resumes it", at(.parked), .stop,
        .action(.resume), at(.reading, .stopping, woken: true)),
    row(
        "a stop while libmicrohttpd has it is noted", at(.reading), .stop,
        .action(.none), at(.reading, .stopping, woken: true)),
    row(
        "a stop while writing is noted", at(.writing), .stop,
        .action(.none), at(.writing, .stopping, woken: true)),
    row(
        "a stop after an abort stays an abort", at(.reading, .aborted), .stop,
        .action(.none), at(.reading, .aborted, woken: true)),
    row(
        "a stop after the free does nothing", at(.finished), .stop,
        .action(.none), at(.finished)),
    row(
        "an abort while libmicrohttpd has it shuts the socket down", at(.reading), .abort,
        .action(.shutdownSocket), at(.reading, .aborted)),
    row(
        "an abort of a parked connection resumes it", at(.parked), .abort,
        .action(.resume), at(.reading, .aborted)),
    row(
        "an abort while the reader parks is left to it", at(.parking), .abort,
        .action(.none), at(.parking, .aborted)),
    row(
        "an abort while writing is left to the writer", at(.writing), .abort,
        .action(.none), at(.writing, .aborted)),
    row(
        "an abort while the writer watches is left to it", at(.watching(roomCame: false)), .abort,
        .action(.none), at(.watching(roomCame: false), .aborted)),
    row(
        "an abort while waiting for room unwatches, shuts down, resumes",
        at(.waitingForRoom(token: 3, unsent: [1, 2])), .abort,
        .action(.unwatchShutdownAndResume(token: 3)), at(.reading, .aborted)),
    row(
        "a second abort does nothing", at(.reading, .aborted), .abort,
        .action(.none), at(.reading, .aborted)),
    row(
        "an abort after the free does nothing", at(.finished), .abort,
        .action(.none), at(.finished)),
    row("the free ends it", at(.reading), .freed, .first(true), at(.finished)),
    row("a second free is ignored", at(.finished), .freed, .first(false), at(.finished)),
]

private let writerTransitions = [
    row(
        "the writer looks: it writes, and forgets a wake", at(.writing, woken: true), .writerLooks,
        .action(.write), at(.writing)),
    row(
        "the writer looks after an abort: it shuts down and resumes", at(.writing, .aborted), .writerLooks,
        .action(.shutdownAndResume), at(.reading, .aborted)),
    row(
        "nothing more to write: parked again", at(.writing), .writerFoundNothing,
        .action(.none), at(.parked)),
    row(
        "nothing more to write but a wake came: it looks again", at(.writing, woken: true), .writerFoundNothing,
        .action(.write), at(.writing, woken: true)),
    row(
        "nothing more to write while stopping: resumed to end", at(.writing, .stopping), .writerFoundNothing,
        .action(.resume), at(.reading, .stopping)),
    row(
        "nothing more after an abort, even woken: shut down and resumed", at(.writing, .aborted, woken: true),
        .writerFoundNothing, .action(.shutdownAndResume), at(.reading, .aborted, woken: true)),
    row(
        "the body ended: resumed to end", at(.writing), .bodyEnded,
        .action(.resume), at(.reading, .ended)),
    row(
        "the body ended after an abort: shut down and resumed", at(.writing, .aborted), .bodyEnded,
        .action(.shutdownAndResume), at(.reading, .aborted)),
    row(
        "a failed send aborts: shut down and resumed", at(.writing), .writeFailed,
        .action(.shutdownAndResume), at(.reading, .aborted)),
    row(
        "a write cut short watches for room", at(.writing), .writeCutShort,
        .action(.watchWritable), at(.watching(roomCame: false))),
    row(
        "a write cut short after an abort: shut down and resumed", at(.writing, .aborted), .writeCutShort,
        .action(.shutdownAndResume), at(.reading, .aborted)),
    row(
        "watching: the rest waits for room", at(.watching(roomCame: false)), .watching(token: 5, unsent: [9]),
        .action(.none), at(.waitingForRoom(token: 5, unsent: [9]))),
    row(
        "watching after the room came: unwatch and write", at(.watching(roomCame: true)),
        .watching(token: 5, unsent: [9]), .action(.unwatchAndWrite(token: 5, unsent: [9])), at(.writing)),
    row(
        "watching after an abort: unwatch, shut down, resume", at(.watching(roomCame: false), .aborted),
        .watching(token: 5, unsent: [9]), .action(.unwatchShutdownAndResume(token: 5)), at(.reading, .aborted)),
    row(
        "room for the rest: unwatch and write it", at(.waitingForRoom(token: 6, unsent: [4, 2])), .roomCame,
        .action(.unwatchAndWrite(token: 6, unsent: [4, 2])), at(.writing)),
    row(
        "room before the watch is recorded: noted", at(.watching(roomCame: false)), .roomCame,
        .action(.none), at(.watching(roomCame: true))),
    row(
        "room after an abort resumed it: nothing", at(.reading, .aborted), .roomCame,
        .action(.none), at(.reading, .aborted)),
]
