/// Something answers may have to wait for before they are sent (durability).
///
/// The daemon asks `hold` for an answer that carries a ticket (`HTTPResponse.holdUntil`).
/// When the ticket has not passed yet, the gate calls `park` (which suspends the
/// connection) and returns true; later it calls `release` exactly once, and the daemon
/// then sends the answer. It must never call `release` before `park`.
protocol ResponseGate: Sendable {
    func hold(until ticket: Int, park: () -> Void, release: @escaping @Sendable () -> Void) -> Bool
}
