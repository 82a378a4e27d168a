/// Base64url without padding (RFC 4648 section 5, as JWS uses it: RFC 7515 section 2).
///
/// Strict: `=` padding, white space and characters outside `A-Z a-z 0-9 - _` are refused, as is
/// a length that leaves one character over (`count % 4 == 1`) and nonzero unused bits in the
/// last character, so each byte string has exactly one accepted text.
enum Base64URL {
    /// The bytes `text` encodes, or nil when it is not canonical unpadded base64url.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count * 3 / 4)
        var buffer: UInt32 = 0
        var bits = 0
        for character in text {
            guard let value = sextet(character) else { return nil }
            buffer = (buffer << 6) | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                bytes.append(UInt8(truncatingIfNeeded: buffer >> UInt32(bits)))
                buffer &= (1 << UInt32(bits)) - 1
            }
        }
        return buffer == 0 ? bytes : nil
    }

    /// The unpadded base64url text of `bytes` (for tests and tools; the verifier only decodes).
    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var text: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                text.append(alphabet[Int((buffer >> UInt32(bits)) & 0x3F)])
            }
            buffer &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { text.append(alphabet[Int((buffer << UInt32(6 - bits)) & 0x3F)]) }
        return String(decoding: text, as: UTF8.self)
    }

    /// Whether `character` is in the base64url alphabet.
    static func isAlphabet(_ character: UInt8) -> Bool { sextet(character) != nil }

    private static func sextet(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): character - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): character - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0") + 52
        case UInt8(ascii: "-"): 62
        case UInt8(ascii: "_"): 63
        default: nil
        }
    }
}
