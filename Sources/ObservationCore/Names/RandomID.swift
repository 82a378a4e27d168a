/// Random hex ids and tokens, for whoever issues commands (never for applying them).
enum RandomID {
    static func make(_ prefix: String, bytes: Int = 8) -> String {
        var generator = SystemRandomNumberGenerator()
        var text = prefix
        for _ in 0..<bytes {
            let byte = UInt8.random(in: 0...255, using: &generator)
            text += String(byte >> 4, radix: 16) + String(byte & 0xF, radix: 16)
        }
        return text
    }
}
