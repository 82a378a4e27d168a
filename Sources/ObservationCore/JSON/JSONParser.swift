/// Parses JSON text (RFC 8259) into `JSON`.
///
/// Strict: one value, optional surrounding white space, valid UTF-8, no
/// trailing commas, no NaN or infinity, no member name twice in one object
/// (RFC 8259 leaves duplicates open; last-wins would hide a typo). Nesting deeper than `maxDepth` is an
/// error, so hostile input cannot exhaust the stack; a string (value or member
/// name) of more than `maxStringBytes` UTF-8 bytes is `payloadTooLarge`. Errors
/// say where they are, as a byte offset.
public struct JSONParser: ~Copyable {
    /// The default nesting limit (the contract's 64).
    public static let defaultMaxDepth = 64

    private let bytes: UnsafeBufferPointer<UInt8>
    private let maxDepth: Int
    private let maxStringBytes: Int
    private var index = 0
    private var depth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxStringBytes: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.maxStringBytes = maxStringBytes
    }

    /// Parses `bytes` as one JSON document.
    public static func parse(
        _ bytes: some Collection<UInt8>, maxDepth: Int = defaultMaxDepth, maxStringBytes: Int = .max
    ) throws(CoreError) -> JSON {
        let result = bytes.withContiguousStorageIfAvailable {
            document(in: $0, maxDepth: maxDepth, maxStringBytes: maxStringBytes)
        }
        if let result { return try result.get() }
        return try parse(Array(bytes), maxDepth: maxDepth, maxStringBytes: maxStringBytes)
    }

    /// Parses `bytes` as one JSON document: a request's body, read in place without the generic
    /// collection's dispatch (`withContiguousStorageIfAvailable` is not specialized across modules).
    public static func parse(
        _ bytes: [UInt8], maxDepth: Int = defaultMaxDepth, maxStringBytes: Int = .max
    ) throws(CoreError) -> JSON {
        try bytes.withUnsafeBufferPointer {
            document(in: $0, maxDepth: maxDepth, maxStringBytes: maxStringBytes)
        }.get()
    }

    /// The document in `buffer`, or why it is not one (as a result: the buffer's closures do not throw typed errors).
    private static func document(in buffer: UnsafeBufferPointer<UInt8>, maxDepth: Int, maxStringBytes: Int)
        -> Result<JSON, CoreError>
    {
        Result { () throws(CoreError) -> JSON in
            var parser = JSONParser(buffer, maxDepth: maxDepth, maxStringBytes: maxStringBytes)
            return try parser.document()
        }
    }

    /// Parses the UTF-8 of `text` as one JSON document.
    public static func parse(
        _ text: String, maxDepth: Int = defaultMaxDepth, maxStringBytes: Int = .max
    ) throws(CoreError) -> JSON {
        try parse(Array(text.utf8), maxDepth: maxDepth, maxStringBytes: maxStringBytes)
    }

    // MARK: - Grammar

    private mutating func document() throws(CoreError) -> JSON {
        skipWhitespace()
        let value = try value()
        skipWhitespace()
        guard index == bytes.count else { throw failure("unexpected text after the JSON value") }
        return value
    }

    private mutating func value() throws(CoreError) -> JSON {
        guard index < bytes.count else { throw failure("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("unexpected character '\(Unicode.Scalar(bytes[index]))'")
        }
    }

    private mutating func object() throws(CoreError) -> JSON {
        try enter()
        index += 1
        skipWhitespace()
        if peek(UInt8(ascii: "}")) {
            index += 1
            depth -= 1
            return .object(JSONObject())
        }
        var members = JSONObject()
        // Room for a few members at once: growing one by one reallocates at 1, 2 and 4. (An
        // object of one member keeps three unused slots, about 100 bytes, while it is stored.)
        members.reserveCapacity(4)
        while true {
            skipWhitespace()
            guard peek(UInt8(ascii: "\"")) else { throw failure("expected a member name in double quotes") }
            let keyStart = index
            let key = try string()
            guard members[key] == nil else { throw failure("duplicate member name '\(key)'", at: keyStart) }
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            members[key] = try value()
            skipWhitespace()
            if peek(UInt8(ascii: ",")) {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            depth -= 1
            return .object(members)
        }
    }

    private mutating func array() throws(CoreError) -> JSON {
        try enter()
        index += 1
        var elements: [JSON] = []
        skipWhitespace()
        if peek(UInt8(ascii: "]")) {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            if peek(UInt8(ascii: ",")) {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            depth -= 1
            return .array(elements)
        }
    }

    /// Inlined, as `expect` is.
    @inline(__always)
    private mutating func enter() throws(CoreError) {
        depth += 1
        guard depth <= maxDepth else { throw tooDeep() }
    }

    private func tooDeep() -> CoreError { failure("nesting deeper than \(maxDepth) levels") }

    // MARK: - Scalars

    private mutating func string() throws(CoreError) -> String {
        index += 1  // opening quote
        let start = index
        var bits: UInt8 = 0  // every byte or-ed: below 0x80 if all are ASCII
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                try checkLength(index - start, of: start)
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                guard let text = Self.text(slice, ascii: bits < 0x80) else {
                    throw failure("invalid UTF-8 in a string", at: start)
                }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("control character in a string") }
            bits |= byte
            index += 1
        }
        return try escapedString(from: start)
    }

    /// `bytes` as a string, nil if they are not valid UTF-8. Not `String(validating:as:)`: it
    /// is generic and unspecialized, and looks up type metadata at run time on every call
    /// (two thirds of its cost for a short string). Decoding replaces each invalid sequence by
    /// U+FFFD, which is valid itself, so a decoded string whose bytes differ from `bytes` had some.
    static func text(_ bytes: UnsafeBufferPointer<UInt8>, ascii: Bool) -> String? {
        if ascii { return String(validatedASCII: bytes) }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.utf8.elementsEqual(bytes) ? text : nil
    }

    /// Inlined (a comparison per string); the error is made out of line.
    @inline(__always)
    private func checkLength(_ count: Int, of start: Int) throws(CoreError) {
        guard count > maxStringBytes else { return }
        throw Self.tooLong(count, at: start - 1, limit: maxStringBytes)
    }

    private static func tooLong(_ count: Int, at offset: Int, limit: Int) -> CoreError {
        CoreError(
            .payloadTooLarge, "a string of \(count) bytes at byte \(offset) is over the limit of \(limit) bytes",
            details: ["limit": .int(limit), "offset": .int(offset)])
    }

    private mutating func escapedString(from start: Int) throws(CoreError) -> String {
        var scratch = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                try checkLength(scratch.count, of: start)
                guard let text = scratch.withUnsafeBufferPointer({ Self.text($0, ascii: false) }) else {
                    throw failure("invalid UTF-8 in a string", at: start)
                }
                return text
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(escape)
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"): scratch.append(contentsOf: try unicodeEscape().utf8)
                default: throw failure("invalid escape '\\\(Unicode.Scalar(escape))'", at: index - 2)
                }
            default:
                guard byte >= 0x20 else { throw failure("control character in a string", at: index - 1) }
                scratch.append(byte)
            }
        }
        throw failure("unterminated string", at: start - 1)
    }

    private mutating func unicodeEscape() throws(CoreError) -> String {
        let first = try hex4()
        var scalarValue = UInt32(first)
        if (0xD800..<0xDC00).contains(first) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw failure("unpaired surrogate in \\u escape") }
            index += 2
            let second = try hex4()
            guard (0xDC00..<0xE000).contains(second) else { throw failure("unpaired surrogate in \\u escape") }
            scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(scalarValue) else { throw failure("unpaired surrogate in \\u escape") }
        return String(Character(scalar))
    }

    private mutating func hex4() throws(CoreError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw failure("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    private mutating func number() throws(CoreError) -> JSON {
        let start = index
        var isInteger = true
        if peek(UInt8(ascii: "-")) { index += 1 }
        if peek(UInt8(ascii: "0")) {
            index += 1
        } else {
            guard digits() > 0 else { throw failure("invalid number", at: start) }
        }
        if peek(UInt8(ascii: ".")) {
            isInteger = false
            index += 1
            guard digits() > 0 else { throw failure("invalid number: digits expected after '.'", at: start) }
        }
        if peek(UInt8(ascii: "e")) || peek(UInt8(ascii: "E")) {
            isInteger = false
            index += 1
            if peek(UInt8(ascii: "+")) || peek(UInt8(ascii: "-")) { index += 1 }
            guard digits() > 0 else { throw failure("invalid number: digits expected in exponent", at: start) }
        }
        if isInteger, let value = integer(from: start) { return .int(value) }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw failure("number out of range", at: start) }
        return .double(value)
    }

    /// The integer just scanned (`-`? digits, from `start`), straight from the bytes (no
    /// `String` in between); nil when it does not fit an `Int` (it is read as a double then).
    private func integer(from start: Int) -> Int? {
        let negative = bytes[start] == UInt8(ascii: "-")
        var value = 0
        for offset in (negative ? start + 1 : start)..<index {
            let digit = Int(bytes[offset] &- UInt8(ascii: "0"))
            // Accumulated negatively: Int.min has no positive counterpart.
            let (shifted, overflowed) = value.multipliedReportingOverflow(by: 10)
            let (next, underflowed) = shifted.subtractingReportingOverflow(digit)
            if overflowed || underflowed { return nil }
            value = next
        }
        if negative { return value }
        let (positive, overflowed) = (0).subtractingReportingOverflow(value)
        return overflowed ? nil : positive
    }

    private mutating func digits() -> Int {
        let start = index
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        return index - start
    }

    private mutating func literal(_ word: StaticString) throws(CoreError) {
        let matches = word.withUTF8Buffer { expected in
            index + expected.count <= bytes.count && expected.indices.allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw failure("invalid literal") }
        index += word.utf8CodeUnitCount
    }

    // MARK: - Helpers

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private func peek(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

    /// Inlined (a comparison per `:`, `}` and `]`); the error is made out of line.
    @inline(__always)
    private mutating func expect(_ byte: UInt8) throws(CoreError) {
        guard peek(byte) else { throw missing(byte) }
        index += 1
    }

    private func missing(_ byte: UInt8) -> CoreError {
        index >= bytes.count ? failure("unexpected end of input") : failure("expected '\(Unicode.Scalar(byte))'")
    }

    private func failure(_ message: String, at offset: Int? = nil) -> CoreError {
        let offset = offset ?? index
        return CoreError(.invalidJSON, "\(message) at byte \(offset)", details: ["offset": .int(offset)])
    }
}
