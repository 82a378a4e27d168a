import ObservationCore

/// What a verified JWT says (section 13): the claims the server uses, already checked.
struct JWTClaims: Sendable, Equatable {
    /// `jti`: the token's id, what `DELETE /v1/tokens/{jti}` revokes.
    let id: String?
    /// `sub`: the client the token's requests are attributed to.
    let subject: String?
    /// `exp`, Unix seconds (a fractional `exp` rounded up, so a revocation is kept long enough).
    let expiresAt: Int64
    /// `nbf`, Unix seconds (a fractional `nbf` rounded down), when the token has one.
    let notBefore: Int64?
    /// `obs.scopes` exactly as the token has it; the caller parses and validates the scopes.
    let scopes: JSON?
}

/// Why a bearer token that is a JWT was refused (section 13: every refusal answers 401).
enum JWTRefusal: Error, Equatable {
    /// Not three base64url parts, a header or payload that is not a JSON object, a header with
    /// `crit` or another `typ`, or a claim of the wrong type or form; the text says which.
    case malformed(String)
    /// The header's `alg` (given here) is not the one the configured key implies.
    case wrongAlgorithm(String)
    case badSignature
    case missingExpiry
    /// `exp` is now or in the past.
    case expired
    /// `exp` is more than 24 hours ahead (a revocation is never kept longer than that).
    case expiresTooLate
    /// `nbf` is in the future.
    case notYetValid

    /// A stable machine word for `details.reason` (the contract fixes only `expired`).
    var reason: String {
        switch self {
        case .malformed: "malformed"
        case .wrongAlgorithm: "algorithm"
        case .badSignature: "signature"
        case .missingExpiry: "noExpiry"
        case .expired: "expired"
        case .expiresTooLate: "expiryTooLate"
        case .notYetValid: "notYetValid"
        }
    }

    /// A sentence for people, for the error's `message`.
    var message: String {
        switch self {
        case .malformed(let why): "The JWT is malformed: \(why)."
        case .wrongAlgorithm(let alg): "The JWT's algorithm \(alg) is not the one this server's key uses."
        case .badSignature: "The JWT's signature does not verify."
        case .missingExpiry: "The JWT has no exp claim; one is required."
        case .expired: "The JWT has expired."
        case .expiresTooLate: "The JWT's exp is more than 24 hours ahead."
        case .notYetValid: "The JWT is not valid yet (nbf is in the future)."
        }
    }
}

/// A key `JWTVerifier` cannot use (not a PEM public key, or of a type or curve it does not support).
struct JWTKeyError: Error, Equatable, CustomStringConvertible {
    let message: String

    var description: String { message }
}
