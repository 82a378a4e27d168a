import COpenSSL
import ObservationCore

/// Verifies bearer tokens that are JWTs (section 13), with libcrypto; the one type that uses it.
///
/// The algorithm comes from the configured key, never from a token: `--jwt-secret` is HS256, and a
/// `--jwt-public-key` is RS256 (RSA, 2048 bits or more), ES256 (EC P-256) or EdDSA (Ed25519). A
/// token whose header names another `alg` is refused before any signature is checked, which
/// closes `alg: none` and the HS256-with-the-public-key confusion.
///
/// Tokens are compact JWS: three parts of unpadded base64url (`=` is refused, RFC 7515 section 2).
/// The signature is verified before any claim is read. Times are Unix seconds; `exp` must lie in
/// `(now, now + 24 h]` and `nbf`, when present, at or before `now`, with no leeway: the contract
/// gives none, and an issuer whose clock runs ahead should not set `nbf`.
///
/// Thread-safe: the key is immutable after `init`, and each `verify` makes its own libcrypto
/// context (OpenSSL allows concurrent verifications with one `EVP_PKEY`).
final class JWTVerifier: Sendable {
    /// The only `alg` accepted: "HS256", "RS256", "ES256" or "EdDSA".
    let algorithm: String

    private let kind: Kind
    /// The HMAC key (HS256); empty otherwise.
    private let secret: [UInt8]
    /// The `EVP_PKEY` (RS256, ES256, EdDSA), owned: never mutated after `init`, freed in `deinit`.
    private nonisolated(unsafe) let publicKey: OpaquePointer?

    /// The longest token looked at; far more than any sensible set of claims.
    static let maxTokenBytes = 16384
    /// How far ahead `exp` may be: a revocation is then never kept longer than this.
    static let maxLifetime: Int64 = 86400

    private enum Kind {
        case hs256, rs256, es256, eddsa

        var algorithm: String {
            switch self {
            case .hs256: "HS256"
            case .rs256: "RS256"
            case .es256: "ES256"
            case .eddsa: "EdDSA"
            }
        }
    }

    /// A verifier of HS256 tokens: HMAC-SHA256 keyed with the UTF-8 bytes of `secret`.
    init(secret: String) {
        kind = .hs256
        algorithm = kind.algorithm
        self.secret = Array(secret.utf8)
        publicKey = nil
    }

    /// A verifier for the PEM public key (`-----BEGIN PUBLIC KEY-----`) in `publicKeyPEM`: RSA is
    /// RS256, EC P-256 is ES256, Ed25519 is EdDSA; any other key throws.
    init(publicKeyPEM: String) throws(JWTKeyError) {
        defer { ERR_clear_error() }
        let pem = Array(publicKeyPEM.utf8)
        let key: OpaquePointer? = pem.withUnsafeBytes { bytes in
            guard let bio = BIO_new_mem_buf(bytes.baseAddress, Int32(bytes.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let key else {
            throw JWTKeyError(message: "The JWT key is not a PEM public key (-----BEGIN PUBLIC KEY-----).")
        }
        do {
            kind = try Self.kind(of: key)
        } catch {
            EVP_PKEY_free(key)
            throw error
        }
        algorithm = kind.algorithm
        secret = []
        publicKey = key
    }

    deinit {
        if let publicKey { EVP_PKEY_free(publicKey) }
    }

    /// The claims of `token` when it is a JWT this verifier accepts at `now` (Unix seconds).
    func verify(_ token: String, now: Int64) -> Result<JWTClaims, JWTRefusal> {
        Result { () throws(JWTRefusal) -> JWTClaims in try claims(of: token, now: now) }
    }

    /// Whether `token` has the form of a JWT (three nonempty base64url parts), rather than an
    /// opaque token (hex): the server picks how to check a bearer token with this.
    static func looksLikeJWT(_ token: String) -> Bool {
        let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy(Base64URL.isAlphabet) }
    }

    // MARK: - Steps

    private func claims(of token: String, now: Int64) throws(JWTRefusal) -> JWTClaims {
        let text = Array(token.utf8)
        guard text.count <= Self.maxTokenBytes else {
            throw .malformed("it is longer than \(Self.maxTokenBytes) bytes")
        }
        let parts = text.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("a JWT is three parts separated by dots") }
        guard let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .malformed("its parts are not unpadded base64url") }
        try checkHeader(Self.object(headerBytes, "the header"))
        // The signing input is the text `header.payload`, exactly as sent.
        guard verifySignature(signature, over: text[..<(parts[0].count + 1 + parts[1].count)]) else {
            throw .badSignature
        }
        return try Self.checkedClaims(Self.object(payloadBytes, "the payload"), now: now)
    }

    private func checkHeader(_ header: JSONObject) throws(JWTRefusal) {
        guard case .string(let alg)? = header["alg"] else { throw .malformed("the header has no alg string") }
        // Cut short: the name is the sender's text, echoed in the error message.
        guard alg == algorithm else { throw .wrongAlgorithm(String(alg.prefix(32))) }
        if let typ = header["typ"] {
            guard case .string(let name) = typ, name.lowercased() == "jwt" else {
                throw .malformed("the header's typ is not JWT")
            }
        }
        // No extension is understood, so any critical one must be refused (RFC 7515 section 4.1.11).
        guard header["crit"] == nil else { throw .malformed("the header has crit, which is not supported") }
    }

    private static func checkedClaims(_ payload: JSONObject, now: Int64) throws(JWTRefusal) -> JWTClaims {
        let current = Double(now)
        guard let expiry = try seconds(payload["exp"], "exp") else { throw .missingExpiry }
        guard expiry > current else { throw .expired }
        guard expiry <= current + Double(maxLifetime) else { throw .expiresTooLate }
        let notBefore = try seconds(payload["nbf"], "nbf")
        if let notBefore, notBefore > current { throw .notYetValid }
        let subject = try identifier(payload["sub"], "sub")
        let id = try identifier(payload["jti"], "jti")
        var scopes: JSON?
        if let obs = payload["obs"] {
            guard case .object(let members) = obs else { throw .malformed("obs is not an object") }
            scopes = members["scopes"]
        }
        return JWTClaims(
            id: id, subject: subject, expiresAt: Int64(expiry.rounded(.up)),
            notBefore: notBefore.map { Int64($0.rounded(.down)) }, scopes: scopes)
    }

    private static func object(_ bytes: [UInt8], _ part: String) throws(JWTRefusal) -> JSONObject {
        guard case .object(let members)? = try? JSONParser.parse(bytes) else {
            throw .malformed("\(part) is not a JSON object")
        }
        return members
    }

    /// A NumericDate claim, bounded so that it converts to `Int64` without overflow.
    private static func seconds(_ value: JSON?, _ name: String) throws(JWTRefusal) -> Double? {
        guard let value else { return nil }
        guard let number = value.number, number.magnitude < 1e15 else {
            throw .malformed("\(name) is not a time in seconds")
        }
        return number
    }

    /// `sub` and `jti`: 1 to 128 characters of `A-Z a-z 0-9 . _ : -`, safe in a path and a log.
    private static func identifier(_ value: JSON?, _ name: String) throws(JWTRefusal) -> String? {
        guard let value else { return nil }
        guard case .string(let text) = value, (1...128).contains(text.utf8.count),
            text.utf8.allSatisfy(isIdentifierCharacter)
        else { throw .malformed("\(name) is not 1 to 128 characters of A-Z a-z 0-9 . _ : -") }
        return text
    }

    private static func isIdentifierCharacter(_ character: UInt8) -> Bool {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
            UInt8(ascii: "-"):
            true
        default: false
        }
    }

    // MARK: - libcrypto

    private static func kind(of key: OpaquePointer) throws(JWTKeyError) -> Kind {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            guard EVP_PKEY_get_bits(key) >= 2048 else {
                throw JWTKeyError(message: "The JWT key is an RSA key of fewer than 2048 bits, too weak for RS256.")
            }
            return .rs256
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 80)
            var length = 0
            let curve =
                EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1
                ? String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self) : "unknown"
            guard curve == "prime256v1" else {
                throw JWTKeyError(
                    message: "The JWT key is an EC key on curve \(curve); only P-256 (prime256v1, ES256) is supported.")
            }
            return .es256
        case EVP_PKEY_ED25519:
            return .eddsa
        default:
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            throw JWTKeyError(
                message: "The JWT key is of type \(type); only RSA (RS256), EC P-256 (ES256) and Ed25519 (EdDSA) "
                    + "keys are supported.")
        }
    }

    private func verifySignature(_ signature: [UInt8], over message: ArraySlice<UInt8>) -> Bool {
        // A failed check leaves errors on this thread's libcrypto queue: drop them.
        defer { ERR_clear_error() }
        switch kind {
        case .hs256: return verifyHMAC(signature, over: message)
        case .rs256: return verifyWithKey(signature, over: message, digest: EVP_sha256())
        case .es256:
            guard let der = Self.derSignature(raw: signature) else { return false }
            return verifyWithKey(der, over: message, digest: EVP_sha256())
        // Ed25519 hashes internally: no digest, and only the one-shot EVP_DigestVerify.
        case .eddsa: return verifyWithKey(signature, over: message, digest: nil)
        }
    }

    private func verifyHMAC(_ signature: [UInt8], over message: ArraySlice<UInt8>) -> Bool {
        guard signature.count == 32, let mac = Self.hmacSHA256(key: secret, message: message) else { return false }
        return CRYPTO_memcmp(mac, signature, 32) == 0
    }

    /// HMAC-SHA256 of `message` keyed with `key` (32 bytes; nil if libcrypto fails). Shared with
    /// the webhooks' signatures (section 16), so this stays the one type that sees libcrypto.
    static func hmacSHA256(key: [UInt8], message: ArraySlice<UInt8>) -> [UInt8]? {
        var mac = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        // HMAC needs a key pointer even when the key is empty: lend it `mac`'s, with length 0.
        let computed = mac.withUnsafeMutableBufferPointer { out in
            key.withUnsafeBufferPointer { key in
                message.withUnsafeBufferPointer { data in
                    HMAC(
                        EVP_sha256(), key.baseAddress ?? UnsafePointer(out.baseAddress), Int32(key.count),
                        data.baseAddress, data.count, out.baseAddress, &length) != nil
                }
            }
        }
        return computed && length == 32 ? mac : nil
    }

    private func verifyWithKey(_ signature: [UInt8], over message: ArraySlice<UInt8>, digest: OpaquePointer?) -> Bool {
        guard let publicKey, !signature.isEmpty, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, digest, nil, publicKey) == 1 else { return false }
        return signature.withUnsafeBufferPointer { signature in
            message.withUnsafeBufferPointer { data in
                EVP_DigestVerify(context, signature.baseAddress, signature.count, data.baseAddress, data.count) == 1
            }
        }
    }

    /// The DER `ECDSA-Sig-Value` libcrypto verifies, from JWS's fixed-width `r || s` (RFC 7518 3.4).
    private static func derSignature(raw: [UInt8]) -> [UInt8]? {
        guard raw.count == 64, let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let (r, s) = raw.withUnsafeBufferPointer { bytes in
            (BN_bin2bn(bytes.baseAddress, 32, nil), BN_bin2bn(bytes.baseAddress! + 32, 32, nil))
        }
        // On success ECDSA_SIG_set0 owns r and s; otherwise they are still ours to free.
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        return written == length ? der : nil
    }
}
