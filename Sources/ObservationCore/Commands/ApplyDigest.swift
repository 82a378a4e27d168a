/// A rolling digest of what a replica applied: every command's revision and every event it
/// made (the log it went to, its id, name and bytes), folded in apply order.
///
/// Replicas that apply the same log make the same events, so their digests at the same log
/// position are equal; a cluster node publishes its digest and compares it with the others'
/// (divergence is detected, not silent). Deterministic and the same on every machine: a fixed
/// multiply-xorshift mix of 64-bit little-endian words, not Swift's per-process seeded
/// `Hasher`. Meant to catch accidents, not attacks.
public struct ApplyDigest: Sendable, Equatable {
    public private(set) var value: UInt64

    /// The digest of an empty history.
    public init() { value = 0x6A09_E667_F3BC_C908 }

    public init(value: UInt64) { self.value = value }

    /// The digest as 16 hex digits (how it is published and kept in checkpoints).
    public var hex: String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    public init?(hex: String) {
        guard hex.utf8.count == 16, let value = UInt64(hex, radix: 16) else { return nil }
        self.value = value
    }

    /// Folds in one applied command: the revision after it, then its events in order.
    public mutating func add(_ effects: Effects) {
        mix(UInt64(truncatingIfNeeded: effects.revision))
        mix(UInt64(truncatingIfNeeded: effects.events.count))
        for logged in effects.events {
            let event = logged.event
            add(logged.log.label.utf8)
            mix(UInt64(truncatingIfNeeded: event.id))
            add(event.name.utf8)
            add(event.data)
        }
    }

    private mutating func add(_ bytes: some Collection<UInt8>) {
        let folded = bytes.withContiguousStorageIfAvailable { [value] buffer in
            Self.fold(value, UnsafeRawBufferPointer(buffer))
        }
        value = folded ?? Self.fold(value, Array(bytes))
    }

    /// Mixes in `bytes` eight at a time, then the rest and the length.
    private static func fold(_ start: UInt64, _ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { fold(start, $0) }
    }

    private static func fold(_ start: UInt64, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var digest = ApplyDigest(value: start)
        var offset = 0
        while offset + 8 <= bytes.count {
            digest.mix(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
            offset += 8
        }
        var tail: UInt64 = 0
        for (index, byte) in bytes[offset...].enumerated() { tail |= UInt64(byte) << (index * 8) }
        digest.mix(tail)
        digest.mix(UInt64(bytes.count))
        return digest.value
    }

    private mutating func mix(_ word: UInt64) {
        value = (value ^ word) &* 0x9FB2_1C65_1E98_DF25
        value ^= value >> 29
    }
}
