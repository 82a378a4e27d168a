/// Byte-level text checks for what arrives on every request (header names, media types),
/// made in place: no `String` is built to compare.
enum ASCII {
    /// Whether `bytes`, ASCII letters lowered, are `lowercase`.
    static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { expected in
            guard bytes.count == expected.count else { return false }
            for index in 0..<expected.count {
                let byte = bytes[index]
                let lowered = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
                guard lowered == expected[index] else { return false }
            }
            return true
        }
    }
}
