/// Byte-level text checks for what arrives on every request (header names, media types),
/// made in place: no `String` is built to compare.
enum ASCII {
    /// Whether `bytes`, ASCII letters lowered, are `lowercase`.
    static func equalsLowercased(_ bytes: UnsafeRawBufferPointer, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        // A letter of `lowercase` also takes its upper case (`| 0x20` lowers exactly the letters
        // onto themselves), anything else only itself.
        let expected = UnsafeRawPointer(lowercase.utf8Start)
        func matches(at offset: Int) -> Bool {  // eight bytes at once
            let want = expected.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            return bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self) | letters(in: want) == want
        }
        guard bytes.count >= 8 else {
            return (0..<bytes.count).allSatisfy { index in
                let (byte, want) = (bytes[index], expected.load(fromByteOffset: index, as: UInt8.self))
                return byte == want || (byte | 0x20 == want && want &- UInt8(ascii: "a") < 26)
            }
        }
        // Whole words, then the last eight bytes (overlapping the words before: equal is equal).
        return stride(from: 0, to: bytes.count - 7, by: 8).allSatisfy(matches(at:)) && matches(at: bytes.count - 8)
    }

    /// 0x20 in each byte of `word` (ASCII, below 0x80: no byte carries into the next) that is a
    /// lowercase letter, 0 in the others.
    private static func letters(in word: UInt64) -> UInt64 {
        let fromA = word &+ 0x1F1F_1F1F_1F1F_1F1F  // a byte's top bit set from `a` (0x61) up
        let pastZ = word &+ 0x0505_0505_0505_0505  // and from `{` (0x7B), just past `z`, up
        return (fromA & ~pastZ & 0x8080_8080_8080_8080) >> 2
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
