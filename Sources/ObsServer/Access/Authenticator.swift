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
    private let hashes = SecretHashes()

    init(token: String?, store: Store, jwt: JWTVerifier? = nil) {
        serviceToken = token.map { Array($0.utf8) }
        self.store = store
        self.jwt = jwt
    }

    /// Who `request` comes from, or why it is refused (401).
    func caller(of request: HTTPRequest) -> Result<Caller, APIError> {
        if isOpen(request) { return .success(.admin) }
        guard let given = presentedToken(request) else {
            return serviceToken == nil ? .success(.admin) : .failure(.unauthorized)
        }
        if let serviceToken, Self.constantTimeEqual(given, serviceToken) { return .success(.admin) }
        if let jwt, JWTVerifier.looksLikeJWT(given) { return verified(given, with: jwt) }
        switch store.lookUpCredential(secretHash: hashes.hash(of: given), at: .now()) {
        case .observer(let id, let access, let reader):
            // Without `--token`, observer tokens are not checked (section 9): the admin's.
            if serviceToken == nil, access == nil { return .success(.admin) }
            return .success(.observer(id: id, access: access, reader: reader))
        case .token(let access, let reader): return .success(.scoped(access, reader: reader))
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
        return .success(.scoped(access, reader: access.readFilter))
    }

    static func ended(_ reason: String) -> APIError {
        unauthorized("the token was \(reason)", reason: reason)
    }

    static func unauthorized(_ message: String, reason: String) -> APIError {
        APIError(status: 401, code: "unauthorized", message: message, details: ["reason": .string(reason)])
    }

    private func presentedToken(_ request: HTTPRequest) -> String? {
        if let header = request.headers.authorization {
            return header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : nil
        }
        guard request.isEventStream else { return nil }
        return request.stringQuery("access_token")
    }

    private func isOpen(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let segments = request.segments
        if segments == ["healthz"] || segments == ["openapi.json"] { return true }
        return segments.first != "v1" && segments != ["metrics"]
    }

    /// Whether `given` is `expected`, in a time that does not depend on where they first differ.
    static func constantTimeEqual(_ given: String, _ expected: [UInt8]) -> Bool {
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
    /// An event stream (SSE, NDJSON or a poll) of an observer or of the admin.
    var isEventStream: Bool {
        method == .get
            && (segments == ["v1", "events"]
                || (segments.count == 4 && segments[0] == "v1" && segments[1] == "observers"
                    && segments[3] == "events"))
    }
}

/// The SHA-256 of the secrets presented lately: a client presents the same secret on every
/// request, and hashing it each time was a third of a scoped PUT's instructions (callgrind,
/// BENCHMARKS.md). Only the hash is cached, never a verdict: every request is still looked up
/// in the state (a revocation holds at once). At most `capacity` entries; full, it starts over.
final class SecretHashes: Sendable {
    private let known = Locked<[String: String]>([:])
    static let capacity = 4096

    func hash(of secret: String) -> String {
        if let hash = known.withLock({ $0[secret] }) { return hash }
        let hash = TokenHash.of(secret)
        known.withLock { known in
            if known.count >= Self.capacity { known.removeAll(keepingCapacity: true) }
            known[secret] = hash
        }
        return hash
    }
}
