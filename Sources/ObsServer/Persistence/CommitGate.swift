import ObservationCore

/// Holds answers back until the changes they report are durable.
///
/// A write's answer carries a ticket (the journal position it reports, `Store.submit`); the
/// committer opens the gate up to each position it made durable, or refuses the positions it
/// rolled back (those are never given again, so a refused ticket stays refused). Parking and
/// releasing happen under this gate's lock, so an answer is never released before it was parked.
///
/// Thread-safety: one lock; `release` is called under it (it only resumes a connection).
final class CommitGate: ResponseGate {
    private struct Waiter {
        let ticket: Int
        let answer: any HeldAnswer
        let since: ContinuousClock.Instant
    }

    private struct State {
        var durable = 0
        /// In the order they were parked; kept in place (its storage is reused, not reallocated).
        var waiting: [Waiter] = []
        /// Positions rolled back, with the answer their tickets get (one range per rollback).
        var refused: [(positions: ClosedRange<Int>, error: APIError)] = []
        var abandoned = false
    }

    private let state: Locked<State>

    /// A gate that already passes every ticket up to `durable` (what the data directory holds).
    init(durable: Int = 0) {
        var initial = State()
        initial.durable = durable
        state = Locked(initial)
    }

    func hold(_ answer: any HeldAnswer, until ticket: Int, park: () -> Void) -> GateVerdict {
        state.withLock { state in
            guard ticket > state.durable else { return .passed }
            if let refused = state.refused.last(where: { $0.positions.contains(ticket) }) {
                return .refused(refused.error)
            }
            guard !state.abandoned else { return .abandoned }
            park()
            state.waiting.append(Waiter(ticket: ticket, answer: answer, since: .now))
            return .parked
        }
    }

    /// Everything up to `position` is durable: releases the answers waiting for it.
    func open(through position: Int) {
        state.withLock { state in
            state.durable = max(state.durable, position)
            let durable = state.durable
            for waiter in state.waiting where waiter.ticket <= durable { waiter.answer.release(.passed) }
            state.waiting.removeAll { $0.ticket <= durable }
        }
    }

    /// The changes after the durable position, up to `position`, were rolled back: their
    /// answers (waiting, and any still on their way to the gate) get `error`.
    func refuse(through position: Int, with error: APIError) {
        state.withLock { state in
            guard position > state.durable else { return }
            state.refused.append((state.durable + 1...position, error))
            for waiter in state.waiting where waiter.ticket <= position { waiter.answer.release(.refused(error)) }
            state.waiting.removeAll { $0.ticket <= position }
        }
    }

    /// Shutdown while commits fail: the answers still waiting will never be known durable.
    func abandon() {
        state.withLock { state in
            state.abandoned = true
            for waiter in state.waiting { waiter.answer.release(.abandoned) }
            state.waiting = []
        }
    }

    var durable: Int { state.withLock { $0.durable } }

    /// Since when the longest-waiting answer waits (nil: none waits).
    var oldestWait: ContinuousClock.Instant? { state.withLock { $0.waiting.first?.since } }
}
