import ObservationCore

/// An answer known later than its request: a durable write's, once its commit is made (or
/// rolled back); a cluster write's, once its command has come back from the shared log and
/// been applied; a cluster read's, once the node has caught up; a poll's, once an event came.
///
/// A handler returns `.later(answer)` and hands the `DeferredAnswer` to whoever will know the
/// answer; they call `resolve` exactly once (later calls are ignored). The daemon parks the
/// connection until then. A producer given to `resolve` runs on one of the daemon's worker
/// threads once the connection is resumed, so whoever resolves does no HTTP work (the tailer
/// only hands over an outcome). An answer of `.close` closes the connection unanswered
/// (whether the change took effect is not known: shutdown; or the client hung up).
///
/// An answer that waits on the client's behalf (a poll) asks to hear if the client hangs up
/// meanwhile (`onHangup`): the daemon then watches the parked connection's socket.
///
/// Thread-safety: one lock (`state`); the parked connection's `resume` is called after it.
final class DeferredAnswer: Sendable {
    typealias Producer = @Sendable () -> Reply

    /// A closure in a struct, so that `Locked` holds it in its concrete representation (see
    /// `Store.journalHandler`).
    private struct Box: Sendable {
        let call: @Sendable () -> Void
    }

    /// The answer once known: made already, or made by the daemon's worker when it is taken.
    private enum Answer: Sendable {
        case made(Reply)
        case produced(by: Producer)
    }

    private enum Phase: Sendable {
        case waiting
        case parked(any ParkedConnection)
        case ready(Answer)
        case taken
    }

    private struct State: Sendable {
        var phase = Phase.waiting
        var hangup: Box?
    }

    private let state = Locked(State())

    init() {}

    /// Asks the daemon to run `handler` (once, on another thread) if the client hangs up while
    /// the connection is parked for this answer. Set it before the handler returns the answer.
    func onHangup(_ handler: @escaping @Sendable () -> Void) {
        state.withLock { $0.hangup = Box(call: handler) }
    }

    /// What to run when the client hangs up while parked (nil: nothing: the daemon does not watch).
    var hangupHandler: (@Sendable () -> Void)? { state.withLock { $0.hangup }?.call }

    /// Provides the answer, made by `produce` on the daemon's worker (first call only); resumes
    /// the connection if it is parked.
    func resolve(_ produce: @escaping Producer) {
        settle(.produced(by: produce))
    }

    /// Provides the answer as it is (`.close`: close unanswered).
    func resolve(with reply: Reply) {
        settle(.made(reply))
    }

    private func settle(_ answer: Answer) {
        let parked = state.withLock { state -> (any ParkedConnection)? in
            switch state.phase {
            case .waiting:
                state.phase = .ready(answer)
                return nil
            case .parked(let connection):
                state.phase = .ready(answer)
                return connection
            case .ready, .taken:
                return nil
            }
        }
        parked?.resume()
    }

    /// The daemon's side: the answer when it is known already (send it now); else nil, having
    /// called `suspend` (park the connection) under the lock, so that `connection.resume()`
    /// (then `take`) can only come after it. A `suspend` that refuses (the daemon is stopping)
    /// gets `.close` (close unanswered), and the answer is dropped.
    func takeOrPark(suspend: () -> Bool, connection: any ParkedConnection) -> Reply? {
        let answer = state.withLock { state -> Answer? in
            switch state.phase {
            case .waiting:
                guard suspend() else {
                    state.phase = .taken
                    return .made(.close)
                }
                state.phase = .parked(connection)
                return nil
            case .ready(let answer):
                state.phase = .taken
                return answer
            case .parked, .taken:
                preconditionFailure("a deferred answer is parked once")
            }
        }
        return answer.map(Self.make)
    }

    /// The answer, once the parked connection was resumed (nil: not known yet; never so after
    /// a resume, by the protocol).
    func take() -> Reply? {
        let answer = state.withLock { state -> Answer? in
            guard case .ready(let answer) = state.phase else { return nil }
            state.phase = .taken
            return answer
        }
        return answer.map(Self.make)
    }

    private static func make(_ answer: Answer) -> Reply {
        switch answer {
        case .made(let reply): reply
        case .produced(let produce): produce()
        }
    }
}

/// A connection parked for a deferred answer: resumed once the answer is known (from any
/// thread). The daemon's request state, not a closure: parking allocates nothing.
protocol ParkedConnection: AnyObject, Sendable {
    func resume()
}
