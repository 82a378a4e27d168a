/// Something answers may have to wait for before they are sent (durability).
///
/// The daemon asks `hold` for an answer that carries a ticket (`HTTPResponse.holdUntil`).
/// When the ticket has not passed yet, the gate calls `park` (which suspends the connection)
/// and answers `.parked`; later it calls the answer's `release` exactly once, with its verdict.
/// It never calls `release` before `park`.
protocol ResponseGate: Sendable {
    func hold(_ answer: any HeldAnswer, until ticket: Int, park: () -> Void) -> GateVerdict
    /// Releases every parked answer as `.abandoned`; from now on `hold` answers `.abandoned`.
    func abandon()
}

/// An answer parked at a gate. The request's own state, not a closure: parking allocates
/// nothing on the event loop for the gate's thread to free.
protocol HeldAnswer: AnyObject, Sendable {
    func release(_ verdict: GateVerdict)
}

/// What the gate decided for an answer.
enum GateVerdict: Sendable {
    /// The ticket has passed (what the answer reports is durable): send it.
    case passed
    /// Parked; `release` comes later (never a verdict given to `release`).
    case parked
    /// What the answer reports was rolled back (never made durable): send this error instead.
    case refused(APIError)
    /// The gate gave up (shutdown): close the connection without an answer.
    case abandoned
}
