/// Writes `JSON` as compact UTF-8 text into a byte buffer.
///
/// Used on the hot path (every response, every change record), so it appends
/// to one growing `[UInt8]` and never builds intermediate strings.
public struct JSONWriter: Sendable {
    public var bytes: [UInt8]

    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    public mutating func write(_ value: JSON) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): raw(flag ? "true" : "false")
        case .int(let number): write(number)
        case .double(let number): write(number)
        case .string(let text): write(text)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for (key, member) in members {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(key)
                bytes.append(UInt8(ascii: ":"))
                write(member)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `text` as a JSON string literal: runs of bytes that need no escape are copied
    /// whole (most strings are one run), not appended byte by byte.
    public mutating func write(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        var text = text  // `withUTF8` is mutating (a bridged string is made contiguous); a native one is not copied
        text.withUTF8 { utf8 in
            var written = 0
            // Indices, not `enumerated()`: unoptimized (debug) builds look the tuple type up per byte.
            for offset in utf8.indices {
                let byte = utf8[offset]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[written..<offset]))
                escape(byte)
                written = offset + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[written...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): raw("\\\"")
        case UInt8(ascii: "\\"): raw("\\\\")
        case 0x0A: raw("\\n")
        case 0x0D: raw("\\r")
        case 0x09: raw("\\t")
        default:
            raw("\\u00")
            bytes.append(Self.hexDigits[Int(byte >> 4)])
            bytes.append(Self.hexDigits[Int(byte & 0xF)])
        }
    }

    public mutating func write(_ number: Int) { Self.appendDecimal(number, to: &bytes) }

    /// `number`'s decimal digits straight into `bytes`, no `String` in between: revisions and
    /// ids go into every record and answer, and event ids into every SSE frame.
    public static func appendDecimal(_ number: Int, to bytes: inout [UInt8]) {
        if number < 0 { bytes.append(UInt8(ascii: "-")) }
        var rest = number.magnitude
        // From the last digit back, into room on the stack (20 digits: UInt.max), then one copy.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var first = digits.count
            repeat {
                first -= 1
                digits[first] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[first...]))
        }
    }

    public mutating func write(_ number: Double) {
        guard number.isFinite else { return raw("null") }
        bytes.append(contentsOf: number.description.utf8)
    }

    /// Appends `text` unchanged: it must already be valid JSON (or JSON syntax).
    public mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends already-encoded JSON bytes.
    public mutating func raw(_ encoded: some Sequence<UInt8>) { bytes.append(contentsOf: encoded) }

    /// Writes `"key":` (the key as a string literal, then a colon).
    public mutating func key(_ name: String) {
        write(name)
        bytes.append(UInt8(ascii: ":"))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

extension JSON {
    /// The compact UTF-8 JSON text of this value.
    public func encoded() -> [UInt8] {
        var writer = JSONWriter()
        writer.write(self)
        return writer.bytes
    }
}
