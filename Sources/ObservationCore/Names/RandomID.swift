/// Random hex ids and tokens, for whoever issues commands (never for applying them).
enum RandomID {
    private static let digits = Array("0123456789abcdef".utf8)

    /// `prefix` and `bytes` random bytes in hex. One draw from the system's generator gives
    /// eight bytes (a draw is a `getrandom` call: one per byte made an observer cost 32).
    static func make(_ prefix: String, bytes: Int = 8) -> String {
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
