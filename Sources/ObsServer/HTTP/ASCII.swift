/// Byte-level text checks for what arrives on every request (header names, media types),
/// made in place: no `String` is built to compare.
enum ASCII {
    /// Whether `bytes`, ASCII letters lowered, are `lowercase`.
    static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        // One comparison per byte: a letter of `lowercase` also takes its upper case (`| 0x20`
        // lowers exactly the letters onto themselves), anything else only itself.
        let expected = lowercase.utf8Start
        for index in 0..<bytes.count {
            let (byte, want) = (bytes[index], expected[index])
            guard byte == want || (byte | 0x20 == want && want &- UInt8(ascii: "a") < 26) else { return false }
        }
        return true
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
