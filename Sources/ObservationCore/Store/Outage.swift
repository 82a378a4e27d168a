/// Why the store refuses clients' writes for now: its data directory cannot take them (disk
/// full, I/O error). Set and cleared by whoever writes the journal (the committer).
struct Outage: Sendable {
    let reason: String
    /// Seconds after which a client may try again (`Retry-After`).
    let retryAfter: Int

    var error: CoreError {
        CoreError(
            .unavailable, "the server cannot make writes durable now (\(reason)); nothing was changed",
            details: ["retryAfter": .int(retryAfter)])
    }
}
