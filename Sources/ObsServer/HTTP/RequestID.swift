import Synchronization

/// A request's id (`X-Request-Id`): the client's own when it sends a usable one, otherwise one
/// made here. Every answer carries it back, and the request's log lines carry it as `requestId`.
enum RequestID {
    /// Longest id taken from a client, in bytes.
    static let maxBytes = 128

    /// `sent` when it is 1–128 printable ASCII characters without spaces (it goes back in a
    /// header and into log lines as it is), else a new id.
    static func accepting(_ sent: String?) -> String {
        if let sent, isUsable(sent) { return sent }
        return make()
    }

    static func isUsable(_ id: String) -> Bool {
        var id = id  // `withUTF8` is mutating (a bridged string is made contiguous); a native one is not copied
        return id.withUTF8 { bytes in
            (1...maxBytes).contains(bytes.count) && bytes.allSatisfy { (0x21...0x7E).contains($0) }
        }
    }

    /// A new id, unique on this server: a random prefix drawn once per process, then a counter
    /// (`4f1c9a07-00002a`). Fifteen characters up to the 16,777,216th request: a Swift small
    /// string, made without an allocation.
    static func make() -> String {
        let number = counter.add(1, ordering: .relaxed).oldValue
        guard number >= 1 << 24 else {
            // `-` and six digits after the prefix's eight: fifteen hex bytes, written as two words.
            var rest: UInt64 = UInt64(UInt8(ascii: "-"))
            for index in 0..<6 { rest |= UInt64(hex(number &>> UInt64(20 - 4 * index))) &<< UInt64(8 * (index + 1)) }
            let words = (prefix.littleEndian, rest.littleEndian)
            return withUnsafeBytes(of: words) {
                String(validatedASCII: UnsafeBufferPointer(rebasing: $0.bindMemory(to: UInt8.self)[..<15]))
            }
        }
        let digits = max(6, (64 - number.leadingZeroBitCount + 3) / 4)
        return String(unsafeUninitializedCapacity: 9 + digits) { buffer in
            UnsafeMutableRawBufferPointer(buffer).storeBytes(of: prefix.littleEndian, as: UInt64.self)
            buffer[8] = UInt8(ascii: "-")
            var rest = number
            for index in (9..<(9 + digits)).reversed() {
                buffer[index] = hex(rest)
                rest &>>= 4
            }
            return 9 + digits
        }
    }

    /// The random prefix's eight hex digits, in the order they are written.
    private static let prefix: UInt64 = {
        let random = UInt64.random(in: 0..<(1 << 32))
        return (0..<8).reduce(0) { word, index in
            word | UInt64(hex(random &>> UInt64(28 - 4 * index))) &<< (8 * index)
        }
    }()
    private static let counter = Atomic<UInt64>(0)

    private static func hex(_ value: UInt64) -> UInt8 {
        let digit = UInt8(truncatingIfNeeded: value & 0xF)
        return digit < 10 ? UInt8(ascii: "0") &+ digit : UInt8(ascii: "a") &+ digit &- 10
    }
}
