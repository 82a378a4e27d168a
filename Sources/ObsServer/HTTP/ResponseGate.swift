/// Something answers may have to wait for before they are sent (durability).
///
/// The daemon asks `hold` for an answer that carries a ticket (`HTTPResponse.holdUntil`).
/// When the ticket has not passed yet, the gate calls `park` (which suspends the
/// connection) and answers `.parked`; later it calls the answer's `release` exactly once:
/// with `true` when the ticket passed (the daemon then sends the answer), with `false` when
/// the gate gave up on it (`abandon()`, at shutdown: the daemon closes the connection
/// unanswered, since whether the change is durable is not known). It never calls `release`
/// before `park`.
protocol ResponseGate: Sendable {
    func hold(_ answer: any HeldAnswer, until ticket: Int, park: () -> Void) -> GateDecision
    /// Releases every parked answer with `false`; from now on `hold` answers `.abandoned`.
    func abandon()
}

/// An answer parked at a gate. The request's own state, not a closure: parking allocates
/// nothing on the event loop for the gate's thread to free.
protocol HeldAnswer: AnyObject, Sendable {
    func release(passed: Bool)
}

/// What the gate decided for an answer.
enum GateDecision {
    /// The ticket has passed: send the answer now.
    case passed
    /// Parked; `release` comes later.
    case parked
    /// The gate gave up (shutdown): close the connection without an answer.
    case abandoned
}
