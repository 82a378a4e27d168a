/// Random ids and tokens, for whoever issues commands (never for applying them).
enum RandomID {
    private static let digits = Array("0123456789abcdef".utf8)
    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)
    /// 62^11 > 2^64: eleven places hold any draw.
    static let idPlaces = 11

    /// `prefix` (four bytes, `obs_`) and one 64-bit draw in base 62, eleven places: fifteen bytes
    /// in all, which Swift keeps inline (a small string: no allocation, no reference count, compared
    /// without reading memory), so the ids a write looks up by are cheap to hash, compare and copy.
    static func make(_ prefix: String) -> String {
        var generator = SystemRandomNumberGenerator()
        var draw: UInt64 = generator.next()
        var text = Array(prefix.utf8)
        text.reserveCapacity(text.count + idPlaces)
        for _ in 0..<idPlaces {
            text.append(alphabet[Int(draw % 62)])
            draw /= 62
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// `prefix` and `bytes` random bytes in hex (tokens and secrets). One draw from the system's
    /// generator gives eight bytes (a draw is a `getrandom` call: one per byte made an observer cost 32).
    static func make(_ prefix: String, bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        var hex: [UInt8] = []
        hex.reserveCapacity(2 * bytes)
        var word: UInt64 = 0
        for index in 0..<bytes {
            if index % 8 == 0 { word = generator.next() }
            let byte = Int(truncatingIfNeeded: word >> (8 * UInt64(index % 8)) & 0xFF)
            hex.append(digits[byte >> 4])
            hex.append(digits[byte & 0xF])
        }
        return prefix + String(decoding: hex, as: UTF8.self)
    }
}
