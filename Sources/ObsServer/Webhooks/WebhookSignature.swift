import Foundation

/// The Standard Webhooks signature (section 16): `v1,` and the base64 of HMAC-SHA256 keyed with
/// the secret's bytes over `{webhook-id}.{webhook-timestamp}.{body}`. The HMAC is libcrypto's
/// (through `JWTVerifier`, the one type that sees it).
enum WebhookSignature {
    static let prefix = "whsec_"

    /// The key bytes of a `whsec_` secret: base64 of 24 to 64 bytes; nil for anything else.
    static func key(of secret: String) -> [UInt8]? {
        guard secret.hasPrefix(prefix), let data = Data(base64Encoded: String(secret.dropFirst(prefix.count))),
            (24...64).contains(data.count)
        else { return nil }
        return Array(data)
    }

    /// A fresh secret: 32 random bytes.
    static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return prefix + Data(bytes).base64EncodedString()
    }

    /// `v1,<base64>` for one attempt.
    static func sign(key: [UInt8], id: String, timestamp: Int64, body: [UInt8]) -> String {
        var message = Array("\(id).\(timestamp).".utf8)
        message += body
        let mac = JWTVerifier.hmacSHA256(key: key, message: message[...]) ?? []
        return "v1," + Data(mac).base64EncodedString()
    }
}
