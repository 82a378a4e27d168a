import ObservationCore

/// The scoped token a stream (or waiting poll) was opened with (section 13): the stream gets
/// `revoked` and ends when the token is revoked or expires, and at a JWT's `exp`.
struct StreamCredential: Sendable {
    /// `tok_…`, or a JWT's id.
    let tokenID: String
    /// A JWT's `exp` (a stored token's expiry is the state's, and may move).
    let expiresAt: Timestamp?

    /// The credential of a caller limited by a token (nil: the admin, or an observer the admin made).
    init?(_ caller: Caller) {
        guard let access = caller.access else { return nil }
        tokenID = access.tokenID
        expiresAt = access.kind == .jwt ? access.expiresAt : nil
    }

    /// `event: revoked` `{"reason", "token"}`: the last event of a stream opened with it.
    func revokedEvent(_ reason: String) -> Event {
        Event(
            id: 0, name: "revoked", data: JSON.object(["reason": .string(reason), "token": .string(tokenID)]).encoded())
    }
}
