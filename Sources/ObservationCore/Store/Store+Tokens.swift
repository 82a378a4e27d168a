// MARK: - Scoped tokens (section 13)

/// What a presented secret (by its hash) is, as of a moment.
public enum CredentialLookup: Sendable {
    /// An observer's own token; `access` is what the token that made it may do (nil: the admin made it).
    case observer(id: String, access: Access?)
    /// A stored scoped token that works, until `expiresAt` (nil: no expiry).
    case token(Access, expiresAt: Timestamp?)
    /// A token (or the token that made the observer) that was revoked or expired.
    case ended(reason: String)
    case unknown
}

extension StoreSession {
    /// Makes a token; the caller hands `secret` out once (the state keeps its hash).
    public func createToken(
        name: String? = nil, scopes: JSON, ttl: Int? = nil, client: String? = nil, secret: String
    ) throws(CoreError) -> TokenSnapshot {
        expected(
            try issue(
                .createToken(
                    id: RandomID.make("tok_"), secretHash: TokenHash.of(secret), name: name, scopes: scopes, ttl: ttl,
                    client: client))
        ) { if case .token(let snapshot, _) = $0 { snapshot } else { nil } }
    }

    /// The stored tokens that work, in id order (the admin's to read).
    public func tokens() throws(CoreError) -> [TokenSnapshot] {
        try read { state, reader throws(CoreError) in
            try check(.adminOnly("read tokens"), reader)
            return state.tokens.all.compactMap { state.tokenSnapshot($0.id) }
        }
    }

    public func token(_ id: String) throws(CoreError) -> TokenSnapshot {
        guard
            let snapshot = try read({ state, reader throws(CoreError) in
                try check(.adminOnly("read tokens"), reader)
                return state.tokenSnapshot(id)
            })
        else { throw CoreError.notFound("token", id) }
        return snapshot
    }
}

extension Store {
    /// What the secret with hash `secretHash` is at `time`: an observer's token, a stored
    /// scoped token, one that ended (with why), or nothing.
    public func lookUpCredential(secretHash: String, at time: Timestamp) -> CredentialLookup {
        state.withLock { state in
            if let observerID = state.observers.observerID(forTokenHash: secretHash) {
                guard state.observers[observerID]?.access != nil else {
                    return .observer(id: observerID, access: nil)
                }
                switch Result(catching: { () throws(CoreError) in try state.access(of: .observer(observerID), at: time)
                })
                {
                case .success(let live):
                    return .observer(id: observerID, access: live)
                case .failure(let error):
                    return .ended(reason: Self.reason(of: error))
                }
            }
            guard let (id, token) = state.tokens.lookup(secretHash: secretHash) else { return .unknown }
            guard let token else { return .ended(reason: state.tokens.endReason(id) ?? "revoked") }
            if let expiresAt = token.expiresAt, expiresAt <= time { return .ended(reason: "expired") }
            return .token(token.access, expiresAt: token.expiresAt)
        }
    }

    private static func reason(of error: CoreError) -> String {
        if case .string(let reason)? = error.details["reason"] { return reason }
        return "revoked"
    }

    /// Why the JWT (or token) `id` ended, if it was revoked and that is still kept.
    public func endReason(ofToken id: String) -> String? {
        state.withLock { $0.tokens.endReason(id) }
    }

    /// The token that made observer `id` (nil: the admin, or no such observer), and whether it exists.
    public func maker(ofObserver id: String) -> (exists: Bool, tokenID: String?) {
        state.withLock { state in
            guard let observer = state.observers[id] else { return (false, nil) }
            return (true, observer.access?.tokenID)
        }
    }

    /// Moves whenever a token is made, changed, revoked or expired, or the state is replaced:
    /// what a credential resolved to before holds while it has not moved.
    public var credentialEpoch: Int { epoch.load(ordering: .acquiring) }

    /// When the next stored token expires, or an ended one is forgotten.
    public var nextTokenDeadline: Timestamp? {
        state.withLock { $0.tokens.nextDeadline.map(Timestamp.init(milliseconds:)) }
    }
}
