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

    /// Whether `text`, ASCII letters lowered, contains `lowercase` (a media type in `Accept`):
    /// compared on its UTF-8 bytes, without Foundation's locale-aware search or a lowered copy.
    static func contains(_ text: String, lowercased lowercase: StaticString) -> Bool {
        var text = text  // `withUTF8` is mutating (a bridged string is made contiguous)
        return text.withUTF8 { bytes in
            lowercase.withUTF8Buffer { needle in
                guard needle.count > 0 else { return true }
                guard bytes.count >= needle.count else { return false }
                return (0...(bytes.count - needle.count)).contains { start in
                    equalsLowercased(
                        UnsafeRawBufferPointer(start: bytes.baseAddress! + start, count: needle.count), lowercase)
                }
            }
        }
    }
}
