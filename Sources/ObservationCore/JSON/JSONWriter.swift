/// Writes `JSON` as compact UTF-8 text.
///
/// Used on the hot path (every response, every change record, every journaled command), so
/// it writes into a buffer of its own with plain copies (on the stack while the text fits in
/// `stackBytes`, then on the heap, doubling), and `encode` makes the one array kept, of
/// exactly the text's size: appending to a growing `[UInt8]` cost uniqueness and capacity
/// checks and a generic copy per piece (BENCHMARKS.md, "Figures behind the code"), and a record is a dozen pieces.
/// Not copyable: the buffer belongs to the `encode` call that lends the writer out.
public struct JSONWriter: ~Copyable {
    private var base: UnsafeMutableRawPointer
    private var count = 0
    private var capacity: Int
    /// Whether `base` was allocated on the heap (by a write that outgrew the first buffer).
    private var onHeap = false

    /// Text up to this size is written on the stack (the standard library's limit for it).
    public static let stackBytes = 1024

    private init(_ buffer: UnsafeMutableRawBufferPointer) {
        base = buffer.baseAddress!
        capacity = buffer.count
    }

    /// The bytes `write` writes with the writer it is lent.
    public static func encode(_ write: (inout JSONWriter) -> Void) -> [UInt8] {
        withUnsafeTemporaryAllocation(byteCount: stackBytes, alignment: 16) { stack in
            var writer = JSONWriter(stack)
            write(&writer)
            return writer.finish()
        }
    }

    /// The bytes written, as an array; frees a heap buffer.
    private consuming func finish() -> [UInt8] {
        let (base, count, onHeap) = (self.base, self.count, self.onHeap)
        let bytes = [UInt8](UnsafeRawBufferPointer(start: base, count: count))
        if onHeap { base.deallocate() }
        return bytes
    }

    /// Room for `more` bytes after `count`.
    @inline(__always)
    private mutating func reserve(_ more: Int) {
        if count + more > capacity { grow(count + more) }
    }

    private mutating func grow(_ needed: Int) {
        var newCapacity = capacity * 2
        while newCapacity < needed { newCapacity *= 2 }
        let bigger = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        bigger.copyMemory(from: base, byteCount: count)
        if onHeap { base.deallocate() }
        base = bigger
        capacity = newCapacity
        onHeap = true
    }

    @inline(__always)
    private mutating func append(_ byte: UInt8) {
        reserve(1)
        base.storeBytes(of: byte, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    private mutating func append(_ source: UnsafeRawPointer, _ length: Int) {
        reserve(length)
        (base + count).copyMemory(from: source, byteCount: length)
        count += length
    }

    public mutating func write(_ value: JSON) {
        switch value {
        case .null: raw("null")
        case .bool(let flag): raw(flag ? "true" : "false")
        case .int(let number): write(number)
        case .double(let number): write(number)
        case .string(let text): write(text)
        case .array(let elements):
            append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { append(UInt8(ascii: ",")) }
                write(element)
            }
            append(UInt8(ascii: "]"))
        case .object(let members):
            append(UInt8(ascii: "{"))
            writeMembers(members)
            append(UInt8(ascii: "}"))
        }
    }

    /// Writes an object's members, `"key":value` separated by commas, without the braces.
    public mutating func writeMembers(_ members: JSONObject) {
        var first = true
        for (name, member) in members {
            if !first { append(UInt8(ascii: ",")) }
            first = false
            key(name)
            write(member)
        }
    }

    /// Writes `text` as a JSON string literal: runs of bytes that need no escape are copied
    /// whole (most strings are one run), not byte by byte.
    public mutating func write(_ text: String) {
        var text = text  // `withUTF8` is mutating (a bridged string is made contiguous); a native one is not copied
        text.withUTF8 { utf8 in
            reserve(utf8.count + 2)
            append(UInt8(ascii: "\""))
            var written = 0
            // Indices, not `enumerated()`: unoptimized (debug) builds look the tuple type up per byte.
            for offset in utf8.indices {
                let byte = utf8[offset]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                if offset > written { append(utf8.baseAddress! + written, offset - written) }
                escape(byte)
                written = offset + 1
            }
            if utf8.count > written { append(utf8.baseAddress! + written, utf8.count - written) }
            append(UInt8(ascii: "\""))
        }
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
            append(Self.hexDigits[Int(byte >> 4)])
            append(Self.hexDigits[Int(byte & 0xF)])
        }
    }

    public mutating func write(_ number: Int) {
        reserve(20)  // Int.min: a sign and 19 digits
        count += Self.writeDecimal(number, to: base + count)
    }

    /// `number`'s decimal digits straight into `bytes`, no `String` in between: revisions and
    /// ids go into every record and answer, and event ids into every SSE frame.
    public static func appendDecimal(_ number: Int, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(byteCount: 20, alignment: 1) { digits in
            let length = writeDecimal(number, to: digits.baseAddress!)
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: digits[..<length]))
        }
    }

    /// Writes `number`'s digits (and sign) at `start`, which has room for 20 bytes; returns how many.
    private static func writeDecimal(_ number: Int, to start: UnsafeMutableRawPointer) -> Int {
        var rest = number.magnitude
        var length = 0
        repeat {  // the digits from the last, reversed below
            start.storeBytes(
                of: UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10), toByteOffset: length, as: UInt8.self)
            rest /= 10
            length += 1
        } while rest > 0
        if number < 0 {
            start.storeBytes(of: UInt8(ascii: "-"), toByteOffset: length, as: UInt8.self)
            length += 1
        }
        var (low, high) = (0, length - 1)
        while low < high {
            let byte = start.load(fromByteOffset: low, as: UInt8.self)
            start.storeBytes(of: start.load(fromByteOffset: high, as: UInt8.self), toByteOffset: low, as: UInt8.self)
            start.storeBytes(of: byte, toByteOffset: high, as: UInt8.self)
            (low, high) = (low + 1, high - 1)
        }
        return length
    }

    public mutating func write(_ number: Double) {
        guard number.isFinite else { return raw("null") }
        raw(number.description.utf8)
    }

    /// Appends `text` unchanged: it must already be valid JSON (or JSON syntax).
    public mutating func raw(_ text: StaticString) {
        append(text.utf8Start, text.utf8CodeUnitCount)
    }

    /// Appends already-encoded JSON bytes.
    public mutating func raw(_ encoded: [UInt8]) {
        encoded.withUnsafeBytes { if let start = $0.baseAddress { append(start, $0.count) } }
    }

    /// Appends already-encoded JSON bytes.
    public mutating func raw(_ encoded: some Sequence<UInt8>) {
        for byte in encoded { append(byte) }
    }

    /// Writes `"key":` (the key as a string literal, then a colon).
    public mutating func key(_ name: String) {
        write(name)
        append(UInt8(ascii: ":"))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)
}

extension JSON {
    /// The compact UTF-8 JSON text of this value.
    public func encoded() -> [UInt8] {
        JSONWriter.encode { $0.write(self) }
    }
}
