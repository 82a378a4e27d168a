import ObservationCore

/// An answer known later than its request: a cluster write's, once its command has come back
/// from the shared log and been applied; a cluster read's, once the node has caught up.
///
/// A handler returns `HTTPResponse.deferred(answer)` and hands the `DeferredAnswer` to whoever
/// will know the answer; they call `resolve` exactly once (later calls are ignored). The daemon
/// parks the connection until then. The producer given to `resolve` runs on one of the
/// daemon's worker threads once the connection is resumed, so whoever resolves does no HTTP
/// work (the tailer only hands over an outcome). A producer that returns nil closes the
/// connection unanswered (whether the change took effect is not known: shutdown).
///
/// An answer that waits on the client's behalf (a poll) asks to hear if the client hangs up
/// meanwhile (`onHangup`): the daemon then watches the parked connection's socket.
final class DeferredAnswer: Sendable {
    typealias Producer = @Sendable () -> HTTPResponse?

    /// A closure in a struct, so that `Locked` holds it in its concrete representation (see
    /// `Store.journalHandler`).
    private struct Box: Sendable {
        let call: @Sendable () -> Void
    }

    private struct ProducerBox: Sendable {
        let produce: Producer
    }

    private enum Phase: Sendable {
        case waiting
        case parked(Box)
        case ready(ProducerBox)
        case taken
    }

    private let phase = Locked(Phase.waiting)
    private let hangup = Locked<Box?>(nil)

    init() {}

    /// Asks the daemon to run `handler` (once, on another thread) if the client hangs up while
    /// the connection is parked for this answer. Set it before the handler returns the answer.
    func onHangup(_ handler: @escaping @Sendable () -> Void) {
        hangup.withLock { $0 = Box(call: handler) }
    }

    /// What to run when the client hangs up while parked (nil: nothing: the daemon does not watch).
    var hangupHandler: (@Sendable () -> Void)? { hangup.withLock { $0 }?.call }

    /// Provides the answer (first call only); resumes the connection if it is parked.
    func resolve(_ produce: @escaping Producer) {
        let release = phase.withLock { phase -> Box? in
            switch phase {
            case .waiting:
                phase = .ready(ProducerBox(produce: produce))
                return nil
            case .parked(let release):
                phase = .ready(ProducerBox(produce: produce))
                return release
            case .ready, .taken:
                return nil
            }
        }
        release?.call()
    }

    /// Resolves with a ready answer.
    func resolve(with response: HTTPResponse) {
        resolve { response }
    }

    /// The daemon's side: the producer when the answer is known already (send it now); else
    /// nil, having called `park` (suspend the connection) under the lock, and `release` comes
    /// once the answer is known (resume it, then call `take`).
    func hold(park: () -> Void, release: @escaping @Sendable () -> Void) -> Producer? {
        phase.withLock { phase in
            switch phase {
            case .waiting:
                park()
                phase = .parked(Box(call: release))
                return nil
            case .ready(let box):
                phase = .taken
                return box.produce
            case .parked, .taken:
                preconditionFailure("a deferred answer is held once")
            }
        }
    }

    /// The producer, after `release` (nil if it is not resolved: never, by the protocol).
    func take() -> Producer? {
        phase.withLock { phase in
            guard case .ready(let box) = phase else { return nil }
            phase = .taken
            return box.produce
        }
    }
}
