/// A token the admin made (section 13): its secret is kept only as a hash.
struct StoredToken: Sendable {
    let id: String
    let name: String
    /// The SHA-256 of its secret (hex), as observers' tokens are kept.
    let secretHash: String
    var access: Access {
        didSet { reader = access.readFilter }
    }
    /// What it may read, made once (and again when its scopes change).
    private(set) var reader: ReadFilter
    let createdAt: Timestamp
    /// When it expires (`ttl`); nil: never.
    var expiresAt: Timestamp?

    init(id: String, name: String, secretHash: String, access: Access, createdAt: Timestamp, expiresAt: Timestamp?) {
        self.id = id
        self.name = name
        self.secretHash = secretHash
        self.access = access
        self.reader = access.readFilter
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// Why a token no longer works, kept for a day so that it answers 401 with a reason.
struct EndedToken: Sendable, Equatable {
    /// `revoked` or `expired`.
    let reason: String
    let secretHash: String?
}

/// The state's tokens: the stored ones by id and by secret hash, their expiries, and the
/// tokens that ended (revoked or expired, stored ones and JWT ids alike), each kept for
/// `endedFor` and then forgotten: a JWT lives at most 24 hours, so its revocation need not
/// be kept longer; a stored token's secret then answers plain 401.
struct TokenTable: Sendable {
    private(set) var tokens: [String: StoredToken] = [:]
    /// Each live token's access, its expiry in it: what every scoped command looks up (one
    /// reference, not a copy of the whole token).
    private(set) var live: [String: Access] = [:]
    private var bySecretHash: [String: String] = [:]
    private(set) var expiries = DeadlineHeap<Int64>()
    private(set) var ended: [String: EndedToken] = [:]
    private(set) var forgetting = DeadlineHeap<Int64>()

    static let endedFor: Int64 = 86_400_000
    /// Ended tokens kept at most (the oldest go first): revocations never grow memory without bound.
    static let maxEnded = 100_000

    var count: Int { tokens.count }
    subscript(id: String) -> StoredToken? { tokens[id] }

    /// Every token id the table holds, live or ended, sorted (checkpoints).
    var ids: [String] { Set(tokens.keys).union(ended.keys).sorted() }

    /// The stored tokens in id order.
    var all: [StoredToken] { tokens.keys.sorted().compactMap { tokens[$0] } }

    /// What a presented secret is: a live token's id, or why it ended.
    func lookup(secretHash: String) -> (id: String, token: StoredToken?)? {
        guard let id = bySecretHash[secretHash] else { return nil }
        return (id, tokens[id])
    }

    /// What live token `id` may read.
    func reader(of id: String) -> ReadFilter? { tokens[id]?.reader }

    /// Why token (or JWT) `id` ended, if it did and that is still kept.
    func endReason(_ id: String) -> String? { ended[id]?.reason }

    /// The next moment a token expires or an ended one is forgotten (ms).
    var nextDeadline: Int64? {
        [expiries.first?.deadline, forgetting.first?.deadline].compactMap { $0 }.min()
    }

    mutating func insert(_ token: StoredToken) {
        tokens[token.id] = token
        live[token.id] = token.access.with(expiresAt: token.expiresAt)
        bySecretHash[token.secretHash] = token.id
        if let expiresAt = token.expiresAt { expiries.schedule(token.id, at: expiresAt.milliseconds) }
    }

    mutating func update(_ id: String, _ body: (inout StoredToken) -> Void) {
        guard var token = tokens[id] else { return }
        body(&token)
        tokens[id] = token
        live[id] = token.access.with(expiresAt: token.expiresAt)
        if let expiresAt = token.expiresAt {
            expiries.schedule(id, at: expiresAt.milliseconds)
        } else {
            expiries.cancel(id)
        }
    }

    /// Ends token `id` (a stored one, or a JWT's id), remembering why until `time` + a day.
    mutating func end(_ id: String, reason: String, at time: Timestamp) {
        let token = tokens.removeValue(forKey: id)
        live[id] = nil
        expiries.cancel(id)
        ended[id] = EndedToken(reason: reason, secretHash: token?.secretHash)
        forgetting.schedule(id, at: time.milliseconds + Self.endedFor)
        while forgetting.count > Self.maxEnded, let oldest = forgetting.popFirst() { forget(oldest.id) }
    }

    /// The stored tokens whose expiry is at or before `time`, earliest first.
    mutating func due(at time: Timestamp) -> [String] {
        var due: [String] = []
        while let next = expiries.first, next.deadline <= time.milliseconds {
            _ = expiries.popFirst()
            due.append(next.id)
        }
        return due
    }

    /// Forgets the ended tokens whose day is over by `time`.
    mutating func forgetEnded(at time: Timestamp) {
        while let next = forgetting.first, next.deadline <= time.milliseconds {
            _ = forgetting.popFirst()
            forget(next.id)
        }
    }

    private mutating func forget(_ id: String) {
        if let hash = ended.removeValue(forKey: id)?.secretHash, bySecretHash[hash] == id {
            bySecretHash[hash] = nil
        }
    }

    /// Restores an ended token (persistence), forgotten at `forgetAt` (ms).
    mutating func restoreEnded(_ id: String, _ entry: EndedToken, forgetAt: Int64) {
        ended[id] = entry
        if let hash = entry.secretHash { bySecretHash[hash] = id }
        forgetting.schedule(id, at: forgetAt)
    }

    /// When an ended token is forgotten (persistence).
    func forgetAt(_ id: String) -> Int64? { forgetting.deadline(of: id) }
}
