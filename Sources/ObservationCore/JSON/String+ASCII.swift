/// Strings made from bytes already known to be ASCII, without checking them again.
extension String {
    /// `bytes`, every one below 0x80 (the caller has looked at each), as a string. Up to 15 bytes
    /// are laid out in place as the standard library's small string, whose two words are ABI
    /// (`_StringObject`; `JSONTests` holds the layout to it): no validation, no allocation.
    /// `String(decoding:as:)` checks the bytes again and then builds the same two words a byte at a time.
    @inlinable
    public init(validatedASCII bytes: UnsafeBufferPointer<UInt8>) {
        // A byte over 0x7F in a string marked ASCII breaks the standard library's invariants: debug
        // builds (every test) hold the callers to their check.
        assert(bytes.allSatisfy { $0 < 0x80 }, "String(validatedASCII:) given a byte beyond ASCII")
        #if _endian(little) && _pointerBitWidth(_64)
            if bytes.count <= 15, let base = bytes.baseAddress {
                self = Self.smallASCII(UnsafeRawPointer(base), count: bytes.count)
                return
            }
        #endif
        self.init(decoding: bytes, as: UTF8.self)
    }

    /// The small string of `count` (at most 15) ASCII bytes at `base`: its bytes in order from the
    /// first word's low byte, then 0xE (small, ASCII) and the count in the second word's high byte.
    /// Read in at most two overlapping loads per word, not a byte at a time.
    @inlinable @inline(__always)
    static func smallASCII(_ base: UnsafeRawPointer, count: Int) -> String {
        var (low, high): (UInt64, UInt64) = (0, 0)
        switch count {
        case 8...:
            low = base.loadUnaligned(as: UInt64.self)
            high = base.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self) >> (8 * (16 - count))
        case 4...:
            low = UInt64(base.loadUnaligned(as: UInt32.self))
            low |= UInt64(base.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)) << (8 * (count - 4))
        case 2...:
            low = UInt64(base.loadUnaligned(as: UInt16.self))
            low |= UInt64(base.loadUnaligned(fromByteOffset: count - 2, as: UInt16.self)) << (8 * (count - 2))
        case 1:
            low = UInt64(base.load(as: UInt8.self))
        default:
            break
        }
        high |= (0xE0 | UInt64(truncatingIfNeeded: count)) &<< 56
        return unsafeBitCast((low, high), to: String.self)
    }
}
