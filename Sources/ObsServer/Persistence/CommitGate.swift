import ObservationCore

/// Holds answers back until the changes they report are durable.
///
/// A write's answer carries a ticket (the store's journal sequence after it); the
/// committer opens the gate up to each sequence it made durable. Parking and un-parking
/// happen under this gate's lock, so an answer is never released before it was parked.
final class CommitGate: ResponseGate {
    private struct State {
        var durable = 0
        /// In the order they were parked; kept in place (its storage is reused, not reallocated).
        var waiting: [(ticket: Int, answer: any HeldAnswer)] = []
        var abandoned = false
    }

    private let state: Locked<State>

    /// A gate that already passes every ticket up to `durable` (what the data directory holds).
    init(durable: Int = 0) {
        var initial = State()
        initial.durable = durable
        state = Locked(initial)
    }

    func hold(_ answer: any HeldAnswer, until ticket: Int, park: () -> Void) -> GateDecision {
        state.withLock { state in
            guard ticket > state.durable else { return .passed }
            guard !state.abandoned else { return .abandoned }
            park()
            state.waiting.append((ticket, answer))
            return .parked
        }
    }

    /// Everything up to `sequence` is durable: releases the answers waiting for it.
    func open(through sequence: Int) {
        state.withLock { state in
            state.durable = max(state.durable, sequence)
            let durable = state.durable
            for waiter in state.waiting where waiter.ticket <= durable { waiter.answer.release(passed: true) }
            state.waiting.removeAll { $0.ticket <= durable }
        }
    }

    /// Shutdown while commits fail: the answers still waiting will never be known durable.
    func abandon() {
        state.withLock { state in
            state.abandoned = true
            for waiter in state.waiting { waiter.answer.release(passed: false) }
            state.waiting = []
        }
    }

    var durable: Int { state.withLock { $0.durable } }
}
