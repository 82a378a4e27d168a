/// Strings made from bytes already known to be ASCII, without checking them again.
extension String {
    /// `bytes`, every one below 0x80 (the caller has looked at each), as a string. Up to 15 bytes
    /// are laid out in place as the standard library's small string, whose two words are ABI
    /// (`_StringObject`): no validation, no allocation. `String(decoding:as:)` checks the bytes
    /// again and then builds the same two words a byte at a time.
    public init(validatedASCII bytes: UnsafeBufferPointer<UInt8>) {
        assert(bytes.allSatisfy { $0 < 0x80 }, "not ASCII")
        guard bytes.count <= 15, String.smallASCIILayout, let base = bytes.baseAddress else {
            self.init(decoding: bytes, as: UTF8.self)
            return
        }
        var words: (UInt64, UInt64) = (0, 0)
        withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: base, byteCount: bytes.count) }
        // The last byte says what the string is: small and ASCII (0xE), and its length.
        words.1 |= (0xE0 | UInt64(truncatingIfNeeded: bytes.count)) &<< 56
        self = unsafeBitCast(words, to: String.self)
    }

    /// Whether small ASCII strings are laid out as `init(validatedASCII:)` writes them (they are
    /// on every 64-bit little-endian platform Swift runs on; if not, that initializer decodes).
    static let smallASCIILayout: Bool = {
        guard MemoryLayout<String>.size == 16, 1.littleEndian == 1 else { return false }
        let full = unsafeBitCast("abcdefghijklmno", to: (UInt64, UInt64).self)
        let empty = unsafeBitCast("", to: (UInt64, UInt64).self)
        return full == (0x6867_6665_6463_6261, 0xEF6F_6E6D_6C6B_6A69) && empty == (0, 0xE000_0000_0000_0000)
    }()
}
