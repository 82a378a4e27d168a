import ObservationCore

/// Resolves a request's credential to a `Caller` (sections 9 and 13), or refuses it with 401.
///
/// - The admin token (`--token`, compared in constant time) may do everything.
/// - A JWT (three base64url parts) is verified with the configured key (`JWTVerifier`), its
///   `jti` checked against the revocations the state keeps.
/// - Any other secret is looked up by its SHA-256: an observer's token, or a stored scoped
///   token; one that ended answers 401 with `details.reason` (`revoked`, `expired`).
/// - An event stream, and only an event stream, may pass the token as `?access_token=`.
/// - Open without a token: `GET /healthz`, `GET /openapi.json` and the static dashboard files.
///
/// Without `--token` the server is open: every request is the admin's, but one that presents
/// a scoped token or a JWT gets that token's scopes (a client may always ask for less).
struct Authenticator: Sendable {
    private let serviceToken: [UInt8]?
    private let store: Store
    private let jwt: JWTVerifier?
    private let cache = CredentialCache()

    init(token: String?, store: Store, jwt: JWTVerifier? = nil) {
        serviceToken = token.map { Array($0.utf8) }
        self.store = store
        self.jwt = jwt
    }

    /// Who `request` comes from, or why it is refused (401).
    func caller(of request: HTTPRequest) -> Result<Caller, APIError> {
        if RouteAccess.isOpen(request) { return .success(.nobody) }
        guard let given = presentedToken(request) else {
            return serviceToken == nil ? .success(.admin) : .failure(.unauthorized)
        }
        if let serviceToken, Self.constantTimeEqual(given, serviceToken) { return .success(.admin) }
        // A scoped token or JWT resolved before, with no token changed since, and not expired.
        let epoch = store.credentialEpoch
        let now = Timestamp.now()
        let known = cache.entry(given)
        if let known, let resolved = known.resolved, resolved.epoch == epoch, now < resolved.validUntil {
            return .success(resolved.caller)
        }
        if let jwt, JWTVerifier.looksLikeJWT(String(given)) {
            let result = verified(String(given), with: jwt)
            if case .success(let caller) = result, let expiresAt = caller.access?.expiresAt {
                cache.keep(given, CredentialCache.Entry(hash: "", resolved: (epoch, caller, expiresAt)))
            }
            return result
        }
        let hash = known?.hash ?? TokenHash.of(String(given))
        switch store.lookUpCredential(secretHash: hash, at: now) {
        case .observer(let id, let access):
            cache.keep(given, CredentialCache.Entry(hash: hash, resolved: nil))
            // Without `--token`, observer tokens are not checked (section 9): the admin's.
            if serviceToken == nil, access == nil { return .success(.admin) }
            return .success(.observer(id: id, access: access))
        case .token(let access, let expiresAt):
            let caller = Caller.scoped(ScopedCaller(access))
            cache.keep(
                given,
                CredentialCache.Entry(
                    hash: hash, resolved: (epoch, caller, expiresAt ?? Timestamp(milliseconds: .max))))
            return .success(caller)
        case .ended(let reason): return .failure(Self.ended(reason))
        case .unknown: return serviceToken == nil ? .success(.admin) : .failure(.unauthorized)
        }
    }

    /// A JWT as a scoped caller: its signature, algorithm and times checked, its id not revoked.
    private func verified(_ token: String, with verifier: JWTVerifier) -> Result<Caller, APIError> {
        let claims: JWTClaims
        switch verifier.verify(token, now: Timestamp.now().milliseconds / 1000) {
        case .success(let verified): claims = verified
        case .failure(let refusal):
            let reason = refusal == .expired ? "expired" : refusal.reason
            return .failure(Self.unauthorized(refusal.message, reason: reason))
        }
        if let subject = claims.subject, !Names.isValidID(subject) {
            return .failure(
                Self.unauthorized("the JWT's sub must be 1–128 of A–Z a–z 0–9 . _ ~ -", reason: "malformed"))
        }
        let grant: AccessGrant
        do {
            grant = try AccessGrant(parsing: claims.scopes ?? .null)
        } catch {
            return .failure(Self.unauthorized("the JWT's obs.scopes: \(error.message)", reason: "scopes"))
        }
        // A JWT without `jti` is named by its hash (its observers show it as `tokenId`; revocable by it).
        let id = claims.id ?? "jwt:" + String(TokenHash.of(token).prefix(32))
        if let reason = store.endReason(ofToken: id) { return .failure(Self.ended(reason)) }
        let access = Access(
            tokenID: id, kind: .jwt, grant: grant, client: claims.subject,
            expiresAt: Timestamp(milliseconds: claims.expiresAt * 1000))
        return .success(.scoped(ScopedCaller(access)))
    }

    static func ended(_ reason: String) -> APIError {
        unauthorized("the token was \(reason)", reason: reason)
    }

    static func unauthorized(_ message: String, reason: String) -> APIError {
        APIError(status: 401, code: "unauthorized", message: message, details: ["reason": .string(reason)])
    }

    /// The secret presented: a slice of the header (no copy), or `?access_token=` on an event stream.
    private func presentedToken(_ request: HTTPRequest) -> Substring? {
        if let header = request.headers.authorization {
            guard header.hasPrefix("Bearer ") else { return nil }
            return header[header.utf8.index(header.utf8.startIndex, offsetBy: 7)...]
        }
        guard !request.query.isEmpty, request.isEventStream || request.isBeaconRemoval else { return nil }
        return request.stringQuery("access_token").map { $0[...] }
    }

    /// Whether `given` is `expected`, in a time that does not depend on where they first differ.
    static func constantTimeEqual(_ given: Substring, _ expected: [UInt8]) -> Bool {
        // Only the length can tell early (it is no secret): scoped secrets are not the admin's length.
        guard given.utf8.count == expected.count else { return false }
        var given = given
        return given.withUTF8 { a in
            var difference = UInt8(a.count == expected.count ? 0 : 1)
            for index in 0..<max(a.count, expected.count) {
                difference |= (index < a.count ? a[index] : 0) ^ (index < expected.count ? expected[index] : 0xFF)
            }
            return difference == 0
        }
    }
}

extension HTTPRequest {
    /// `POST /v1/observers/{id}/remove`: `navigator.sendBeacon` cannot set headers either (section 14).
    var isBeaconRemoval: Bool {
        method == .post && segments.count == 4 && segments.segment(0, is: "v1")
            && segments.segment(1, is: "observers") && segments.segment(3, is: "remove")
    }

    /// An event stream (SSE, NDJSON or a poll) of an observer or of the admin.
    var isEventStream: Bool {
        method == .get
            && (segments.are("v1", "events")
                || (segments.count == 4 && segments.segment(0, is: "v1") && segments.segment(1, is: "observers")
                    && segments.segment(3, is: "events")))
    }
}

/// What the secrets presented lately resolved to: a client presents the same secret on every
/// request, and hashing it and looking it up each time was a large share of a scoped PUT
/// (BENCHMARKS.md, "Figures behind the code"). A scoped token's or JWT's caller is reused while no
/// token has changed since (`Store.credentialEpoch`: any token made, changed, revoked or expired
/// moves it) and until it expires; an observer token's hash only (its observer may go). At most
/// `capacity` entries; full, it starts over.
final class CredentialCache: Sendable {
    struct Entry: Sendable {
        /// The secret's SHA-256 ("" for a JWT: it is verified, not looked up).
        let hash: String
        let resolved: (epoch: Int, caller: Caller, validUntil: Timestamp)?
    }

    /// Direct-mapped by a cheap sum of the secret's last bytes (random, so well spread), each
    /// slot checked against the whole secret: cheaper than hashing all of it for a dictionary.
    private let slots = Locked<[(secret: Substring, entry: Entry)?]>(Array(repeating: nil, count: capacity))
    static let capacity = 4096

    func entry(_ secret: Substring) -> Entry? {
        let slot = Self.slot(secret)
        return slots.withLock { slots in
            guard let held = slots[slot], held.secret == secret else { return nil }
            return held.entry
        }
    }

    func keep(_ secret: Substring, _ entry: Entry) {
        let slot = Self.slot(secret)
        slots.withLock { $0[slot] = (secret, entry) }
    }

    private static func slot(_ secret: Substring) -> Int {
        var secret = secret
        return secret.withUTF8 { bytes in
            var sum = 0
            for byte in bytes.suffix(8) { sum = sum &* 31 &+ Int(byte) }
            return sum & (capacity - 1)
        }
    }
}
