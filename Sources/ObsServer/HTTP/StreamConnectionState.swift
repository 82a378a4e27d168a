/// Who has an event-stream connection, and what the caller must do next: the state machine
/// behind `StreamConnection`, with no socket and no libmicrohttpd in it.
///
/// Every method is one event (the reader found nothing, a wake, an abort, a write cut
/// short, …); it changes the state and returns the `Action` its caller performs after the
/// lock is released. The actions keep three promises:
///
/// - **One owner of the socket.** libmicrohttpd while the connection is not parked
///   (`reading`); while it is parked, the one thread that took `writing` (or `watching`), or
///   no one (`parked`, `waitingForRoom`). A wake takes a parked connection for a direct write.
/// - **A resume follows its suspend.** The reader suspends outside the lock (`parking`), then
///   reports `suspended()`; whatever came meanwhile is only recorded, and acted on then. So
///   `.resume` is only returned for a connection already suspended, once per suspension
///   (libmicrohttpd's resume of a connection not suspended is undefined).
/// - **The resume comes last.** Once resumed, libmicrohttpd may end the connection and close
///   its socket: an action that resumes does it after everything else it does to the socket.
///
/// No wake-up is lost: one that comes while the reader or a writer looks at the body sets
/// `woken`, and they look again instead of parking.
///
/// Thread-safety: a value; `StreamConnection` keeps it in a `Locked`.
struct StreamConnectionState: Equatable {
    /// Who has the connection.
    enum Phase: Equatable {
        /// Not parked: libmicrohttpd has it, and asks the reader for bytes.
        case reading
        /// The reader found nothing and is suspending the connection (`suspended()` follows).
        case parking
        /// Suspended, with nothing to send: a wake takes it.
        case parked
        /// Suspended; one thread writes to the socket directly.
        case writing
        /// Suspended; the writer, cut short, registers for room (`watching(token:unsent:)`
        /// follows). `roomCame`: the socket had room before that.
        case watching(roomCame: Bool)
        /// Suspended; `unsent` (the rest of a direct write) waits for room on the socket.
        case waitingForRoom(token: UInt64, unsent: [UInt8])
        /// libmicrohttpd released the stream: nothing may touch the socket any more.
        case finished
    }

    /// How the stream ends, from weakest to strongest (it only ever grows).
    enum Ending: Comparable {
        case none
        /// At the next read that finds nothing pending (server shutdown).
        case stopping
        /// At the next read: the body said it is over (seen by a direct write).
        case ended
        /// At the next read, whatever is pending: the client went away, or fell behind.
        case aborted
    }

    /// What the reader does after looking at the state.
    enum ReadStep: Equatable {
        /// Read the body (again: a wake came while it looked).
        case read
        /// Suspend the connection, then report `suspended()`.
        case suspend
        /// End the response (return -1).
        case end
    }

    /// What the caller does once the lock is released.
    enum Action: Equatable {
        case none
        /// Write the body's bytes to the parked socket: this thread is the writer (or stays it).
        case write
        /// Resume the connection: its next read goes on, or ends the response.
        case resume
        /// Shut the socket down, then resume (a write failed, or the stream was aborted while
        /// it was written: libmicrohttpd's last chunk must not follow part of a chunk).
        case shutdownAndResume
        /// Stop watching for room, shut the socket down (its client does not read), then resume.
        case unwatchShutdownAndResume(token: UInt64)
        /// Watch the socket for room, then report `watching(token:unsent:)`.
        case watchWritable
        /// Stop watching for room (it came), then write `unsent` before anything else.
        case unwatchAndWrite(token: UInt64, unsent: [UInt8])
        /// Shut the socket down before the lock is released: libmicrohttpd has the connection,
        /// and may free it and close the socket as soon as the free callback gets the lock.
        case shutdownSocket
    }

    /// Whether wakes may write to a parked socket (false: every byte goes through libmicrohttpd).
    let directWrites: Bool
    private(set) var phase: Phase
    private(set) var ending: Ending
    /// A wake came since the reader or the writer last looked at the body.
    private(set) var woken: Bool

    init(directWrites: Bool, phase: Phase = .reading, ending: Ending = .none, woken: Bool = false) {
        self.directWrites = directWrites
        self.phase = phase
        self.ending = ending
        self.woken = woken
    }

    // MARK: - The reader (libmicrohttpd's callback, not parked)

    /// The reader is about to read the body.
    mutating func readerLooks() -> ReadStep {
        woken = false
        return ending >= .ended ? .end : .read
    }

    /// The body had nothing: park, unless a wake came meanwhile or the stream is ending.
    mutating func readerFoundNothing() -> ReadStep {
        if ending != .none { return .end }
        if woken { return .read }
        phase = .parking
        return .suspend
    }

    /// The reader suspended the connection: what came while it did is acted on now.
    mutating func suspended() -> Action {
        guard phase == .parking else { return .none }
        if ending != .none || (woken && !directWrites) {
            phase = .reading
            return .resume
        }
        phase = woken ? .writing : .parked
        return woken ? .write : .none
    }

    // MARK: - Any thread

    /// There is more to send: a parked connection is written to (or resumed); otherwise the
    /// one who looks at the body looks again.
    mutating func wake() -> Action {
        woken = true
        guard phase == .parked else { return .none }
        if !directWrites || ending != .none {
            phase = .reading
            return .resume
        }
        phase = .writing
        return .write
    }

    /// Server shutdown: end once nothing is pending.
    mutating func stop() -> Action {
        guard phase != .finished else { return .none }
        ending = max(ending, .stopping)
        return wake()
    }

    /// End now, dropping what is pending. A writer that has the socket ends it itself when it
    /// next looks; a connection libmicrohttpd has is shut down, so that a send blocked on a
    /// client that does not read fails.
    mutating func abort() -> Action {
        guard phase != .finished, ending != .aborted else { return .none }
        ending = .aborted
        switch phase {
        case .reading:
            return .shutdownSocket
        case .parked:
            phase = .reading
            return .resume
        case .waitingForRoom(let token, _):
            phase = .reading
            return .unwatchShutdownAndResume(token: token)
        case .parking, .writing, .watching, .finished:
            return .none
        }
    }

    /// libmicrohttpd released the stream (its socket closes next). Returns whether this is
    /// the first time (the body is told once).
    mutating func freed() -> Bool {
        guard phase != .finished else { return false }
        phase = .finished
        return true
    }

    // MARK: - The writer (the connection parked)

    /// The writer is about to send: `.write` to go on, or how to hand the connection back.
    mutating func writerLooks() -> Action {
        woken = false
        return ending == .aborted ? handBack() : .write
    }

    /// The body had nothing more: park again, unless a wake came meanwhile (`.write`: look
    /// again) or the stream is ending.
    mutating func writerFoundNothing() -> Action {
        if woken && ending != .aborted { return .write }
        if ending != .none { return handBack() }
        phase = .parked
        return .none
    }

    /// The body said it is over: the next read ends the response.
    mutating func bodyEnded() -> Action {
        ending = max(ending, .ended)
        return handBack()
    }

    /// The socket refused the bytes (the client is gone).
    mutating func writeFailed() -> Action {
        ending = .aborted
        return handBack()
    }

    /// The socket did not take a whole write: watch it for room.
    mutating func writeCutShort() -> Action {
        if ending == .aborted { return handBack() }
        phase = .watching(roomCame: false)
        return .watchWritable
    }

    /// The writer watches for room with `token`: `unsent` waits for it, unless it came already.
    mutating func watching(token: UInt64, unsent: [UInt8]) -> Action {
        guard case .watching(let roomCame) = phase else { return .none }
        if ending == .aborted {
            phase = .reading
            return .unwatchShutdownAndResume(token: token)
        }
        if roomCame {
            phase = .writing
            return .unwatchAndWrite(token: token, unsent: unsent)
        }
        phase = .waitingForRoom(token: token, unsent: unsent)
        return .none
    }

    /// The socket has room (or failed: the next send says so).
    mutating func roomCame() -> Action {
        switch phase {
        case .waitingForRoom(let token, let unsent):
            phase = .writing
            return .unwatchAndWrite(token: token, unsent: unsent)
        case .watching:
            phase = .watching(roomCame: true)
            return .none
        default:
            return .none  // aborted meanwhile
        }
    }

    /// The writer gives the connection back to libmicrohttpd (whose next read ends the
    /// response): shut down first if it was aborted.
    private mutating func handBack() -> Action {
        phase = .reading
        return ending == .aborted ? .shutdownAndResume : .resume
    }
}
