// MARK: - Scoped tokens (section 13): made, changed, revoked and expired as commands

/// A stored token as clients see it (never its secret).
public struct TokenSnapshot: Sendable, Equatable {
    public let id: String
    public let name: String
    public let scopes: JSON
    public let expiresAt: Timestamp?
    public let client: String?
    public let createdAt: Timestamp
    /// Observers made with it.
    public let observers: Int

    public var json: JSONObject {
        [
            "id": .string(id), "name": .string(name), "scopes": scopes,
            "expiresAt": expiresAt.map { .string($0.rfc3339) } ?? .null, "client": client.map(JSON.string) ?? .null,
            "createdAt": .string(createdAt.rfc3339), "observers": .int(observers),
        ]
    }
}

extension StoreState {
    /// Seconds a `ttl` may be: a second to a year.
    static let ttlRange = 1...31_536_000

    mutating func createToken(
        id: String, secretHash: String, name: String?, scopes: JSON, ttl: Int?, client: String?, at time: Timestamp
    ) throws(CoreError) -> TokenSnapshot {
        if let name { try Names.checkID(name, "token name") }
        if let client { try Names.checkID(client, "client name") }
        let grant = try AccessGrant(parsing: scopes)
        let expiresAt = try ttl.map { (seconds) throws(CoreError) in try Self.expiry(seconds, from: time) }
        guard tokens.count < limits.maxTokens else {
            throw CoreError(
                .limitExceeded, "the server holds its limit of \(limits.maxTokens) tokens",
                details: ["limit": .int(limits.maxTokens)])
        }
        let id = Self.freshID(id) { tokens[$0] != nil || tokens.endReason($0) != nil }
        tokens.insert(
            StoredToken(
                id: id, name: name ?? id, secretHash: secretHash,
                access: Access(tokenID: id, kind: .token, grant: grant, client: client, expiresAt: nil),
                createdAt: time, expiresAt: expiresAt))
        journal.mark(.token, id)
        effects.timerMustLook = true
        let revision = nextRevision()
        let snapshot = tokenSnapshot(id)!
        emitAdmin("tokenCreated", ["token": .object(snapshot.json), "revision": .int(revision)])
        return snapshot
    }

    /// `PATCH /v1/tokens/{id}`: new scopes (its observers' registrations read with them from
    /// now on) and/or a new expiry counted from now. Open streams go on.
    mutating func changeToken(_ id: String, scopes: JSON?, ttl: JSON?, at time: Timestamp) throws(CoreError)
        -> TokenSnapshot
    {
        guard tokens[id] != nil else { throw CoreError.notFound("token", id) }
        guard scopes != nil || ttl != nil else { return tokenSnapshot(id)! }  // nothing to change: no revision
        let grant = try scopes.map { (json) throws(CoreError) in try AccessGrant(parsing: json) }
        var expiry: Timestamp?? = .none
        switch ttl {
        case nil: break
        case .null?: expiry = .some(nil)
        case .int(let seconds)?: expiry = .some(try Self.expiry(seconds, from: time))
        case .double(let seconds)? where seconds.rounded() == seconds && abs(seconds) < 1e9:
            expiry = .some(try Self.expiry(Int(seconds), from: time))
        case let other?:
            throw CoreError(
                .invalidRequest, "ttl must be seconds or null, not \(other.typeNameWithArticle)",
                details: ["field": "ttl"])
        }
        tokens.update(id) { token in
            if let grant { token.access = token.access.with(grant: grant) }
            if case .some(let expiresAt) = expiry { token.expiresAt = expiresAt }
        }
        journal.mark(.token, id)
        effects.timerMustLook = true
        let revision = nextRevision()
        if let grant { regrant(id, grant) }
        let snapshot = tokenSnapshot(id)!
        emitAdmin("tokenChanged", ["token": .object(snapshot.json), "revision": .int(revision)])
        return snapshot
    }

    /// `DELETE /v1/tokens/{id}`: a stored token, or a JWT's id. Nil when it had already ended.
    mutating func revokeToken(_ id: String, at time: Timestamp) throws(CoreError) -> Int? {
        try Self.checkTokenID(id)
        guard tokens.endReason(id) == nil else { return nil }
        endToken(id, reason: "revoked", at: time)
        return revision
    }

    /// Ends every stored token whose expiry is due by `time`; forgets endings a day old.
    mutating func expireTokens(at time: Timestamp) -> [String] {
        let due = tokens.due(at: time)
        for id in due { endToken(id, reason: "expired", at: time) }
        tokens.forgetEnded(at: time)
        effects.timerMustLook = true
        return due
    }

    private mutating func endToken(_ id: String, reason: String, at time: Timestamp) {
        tokens.end(id, reason: reason, at: time)
        journal.mark(.token, id)
        effects.timerMustLook = true
        effects.endedTokens.append((id, reason))
        let revision = nextRevision()
        emitAdmin(
            "tokenRevoked", ["token": .string(id), "reason": .string(reason), "revision": .int(revision)])
        removeDeliveringObservers(madeBy: id, reason: reason)
    }

    func tokenSnapshot(_ id: String) -> TokenSnapshot? {
        guard let token = tokens[id] else { return nil }
        return TokenSnapshot(
            id: token.id, name: token.name, scopes: token.access.grant.json, expiresAt: token.expiresAt,
            client: token.access.client, createdAt: token.createdAt,
            observers: observers.count(madeBy: id))
    }

    private static func expiry(_ seconds: Int, from time: Timestamp) throws(CoreError) -> Timestamp {
        guard ttlRange.contains(seconds) else {
            throw CoreError(
                .invalidRequest, "ttl must be 1–\(ttlRange.upperBound) seconds", details: ["field": "ttl"])
        }
        return Timestamp(milliseconds: time.milliseconds + Int64(seconds) * 1000)
    }

    /// A token id: the id alphabet, or a JWT's `jti` (1–128 of A–Z a–z 0–9 . _ : ~ -).
    static func checkTokenID(_ id: String) throws(CoreError) {
        guard (1...128).contains(id.utf8.count),
            id.utf8.allSatisfy({ $0 == UInt8(ascii: ":") || Names.isValidID(String(UnicodeScalar($0))) })
        else {
            throw CoreError(
                .invalidName, "invalid token id '\(id.prefix(140))'", details: ["name": .string(String(id.prefix(140)))]
            )
        }
    }
}

// MARK: - Deciding with a principal

extension StoreState {
    /// What `principal` may do now (nil: everything, the admin, the server or an observer the
    /// admin made); throws 401 for a token that ended, with `details.reason`.
    func access(of principal: Principal, at time: Timestamp) throws(CoreError) -> Access? {
        switch principal {
        case .admin, .server, .nobody: return nil
        case .token(let id):
            guard let access = tokens.live[id] else { throw Self.ended(tokens.endReason(id) ?? "revoked") }
            if let expiresAt = access.expiresAt, expiresAt <= time { throw Self.ended("expired") }
            return access
        case .jwt(let access):
            if let reason = tokens.endReason(access.tokenID) { throw Self.ended(reason) }
            if let expiresAt = access.expiresAt, expiresAt <= time { throw Self.ended("expired") }
            return access
        case .observer(let id):
            guard let access = observers[id]?.access else { return nil }
            return try self.access(of: access.kind == .jwt ? .jwt(access) : .token(access.tokenID), at: time)
        }
    }

    /// What `principal`'s reads may show (nil: everything), its token's `access` resolved
    /// already: the filter its read scopes make, kept with the token or the observer (a JWT's
    /// is made anew).
    func readFilter(of principal: Principal, access: Access?) -> ReadFilter? {
        guard let access else { return nil }
        switch principal {
        case .token(let id): return tokens.reader(of: id) ?? access.readFilter
        case .observer(let id): return observers[id]?.reader ?? access.readFilter
        default: return access.readFilter
        }
    }

    static func ended(_ reason: String) -> CoreError {
        CoreError(.unauthorized, "the token was \(reason)", details: ["reason": .string(reason)])
    }

    /// Decides `action` on object `id` for `principal`, whose token may do `access` (the
    /// question as the state knows the object now).
    func check(_ action: AccessAction, on id: String, by principal: Principal, access: Access?) throws(CoreError) {
        try Authorization.check(objectQuestion(action, id), by: principal, access: access)
    }

    /// New scopes for token `id`: its observers read with them from now on.
    private mutating func regrant(_ id: String, _ grant: AccessGrant) {
        for observer in observers.made(by: id) {
            observers.update(observer) { $0.access = $0.access?.with(grant: grant) }
            rebindReaders(of: observer)
        }
    }
}

// MARK: - Readers: what a scoped observer's registrations read

extension StoreState {
    /// Binds an observer's registrations again with its reader as it is now (its token's
    /// scopes changed): their values, dependencies and query windows follow the new scopes.
    /// Registrations change silently (the next record's `old` is the value under the new
    /// scopes); each query moves to the evaluation of its new scopes with one record of the difference.
    mutating func rebindReaders(of observerID: String) {
        let reader = observers[observerID]?.reader
        for registration in registrations.owned(by: observerID) {
            var unbound = registration
            unbound.reader = reader
            let rebound = bind(unbound)
            registrations.update(registration.id) { registration, dependents in
                var next = rebound
                next.dependencies = registration.dependencies
                dependents.rebind(&next, to: rebound.dependencies)
                registration = next
            }
            journal.mark(.registration, registration.id)
        }
        for query in queries.owned(by: observerID) { refilterQuery(query, reader: reader) }
    }
}
