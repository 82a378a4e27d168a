import ObservationCore

/// Keeps answers waiting until the changes they report are durable.
///
/// A write's answer comes with a ticket (the journal position it reports, `Store.submit`);
/// the committer opens the gate up to each position it made durable, or refuses the positions
/// it rolled back (those are never given again, so a refused ticket stays refused). An answer
/// that must wait is a `DeferredAnswer`, resolved after the gate's lock is released.
///
/// Thread-safety: one lock, over the state below; nothing is called under it.
final class CommitGate: Sendable {
    private struct Waiter {
        let ticket: Int
        let answer: DeferredAnswer
        let response: HTTPResponse
        let since: ContinuousClock.Instant
    }

    private struct State {
        var durable = 0
        /// In the order they were parked.
        var waiting: [Waiter] = []
        /// Positions rolled back, with the answer their tickets get (one range per rollback).
        var refused: [(positions: ClosedRange<Int>, error: APIError)] = []
    }

    private let state: Locked<State>

    /// A gate that already passes every ticket up to `durable` (what the data directory holds).
    init(durable: Int = 0) {
        var initial = State()
        initial.durable = durable
        state = Locked(initial)
    }

    /// `response` now when `ticket` is durable (or its refusal, when it was rolled back);
    /// else later, once it is (at shutdown the daemon gives up on answers still waiting).
    func reply(_ response: HTTPResponse, whenDurable ticket: Int) -> Reply {
        state.withLock { state in
            // Refused first: a late answer of an undone write stays refused after later commits.
            if let refused = state.refused.last(where: { $0.positions.contains(ticket) }) {
                return .now(refused.error.response)
            }
            guard ticket > state.durable else { return .now(response) }
            let answer = DeferredAnswer()
            state.waiting.append(Waiter(ticket: ticket, answer: answer, response: response, since: .now))
            return .later(answer)
        }
    }

    /// Everything up to `position` is durable: answers the writes waiting for it.
    func open(through position: Int) {
        let passed = state.withLock { state in
            state.durable = max(state.durable, position)
            return state.waiting.take { $0.ticket <= position }
        }
        for waiter in passed { waiter.answer.resolve(with: .now(waiter.response)) }
    }

    /// The changes after the durable position, up to `position`, were rolled back: their
    /// answers (waiting, and any still on their way to the gate) are `error`.
    func refuse(through position: Int, with error: APIError) {
        let refused = state.withLock { state -> [Waiter] in
            guard position > state.durable else { return [] }
            state.refused.append((state.durable + 1...position, error))
            return state.waiting.take { $0.ticket <= position }
        }
        for waiter in refused { waiter.answer.resolve(with: .now(error.response)) }
    }

    var durable: Int { state.withLock { $0.durable } }

    /// Since when the longest-waiting answer waits (nil: none waits).
    var oldestWait: ContinuousClock.Instant? { state.withLock { $0.waiting.first?.since } }
}

extension Array {
    /// Removes the elements that satisfy `taken`, in order, and returns them (the rest keep theirs).
    fileprivate mutating func take(where taken: (Element) -> Bool) -> [Element] {
        var out: [Element] = []
        removeAll { element in
            guard taken(element) else { return false }
            out.append(element)
            return true
        }
        return out
    }
}
