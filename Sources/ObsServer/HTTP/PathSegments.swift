import Glibc

/// A request's path split at `/` (section 1): each segment is percent-decoded on its own, so
/// `%2F` is a character of its segment, never a separator, and `%00` is a NUL inside it, never
/// the end of the path. `/` has no segment; empty segments (`//`, a trailing `/`) are kept.
///
/// Splitting makes nothing: a segment is a place in the raw path's bytes, compared with a text
/// in place, and made a `String` only when it is read (`self[index]`, decoded): a route reads
/// its parameters, nothing else.
struct PathSegments: RandomAccessCollection, Sendable {
    /// The path as sent (still percent-encoded), without the query string.
    let path: String
    let startIndex = 0
    let endIndex: Int
    /// Where each segment starts in the path's bytes: byte `i` of `starts` is segment `i`'s, for
    /// a path of at most 255 bytes and 8 segments (every route's); a longer one's are in `long`.
    private let starts: UInt64
    private let long: [Int]
    private let length: Int

    /// `"/a/b%2Fc"` has the segments `a` and `b/c`, `"/"` none.
    init(_ path: String) {
        self.path = path
        var path = path  // `withUTF8` is mutating (a bridged string is made contiguous); a native one is not copied
        length = path.utf8.count
        (starts, long, endIndex) = path.withUTF8(Self.split)
    }

    /// Where the segments of a path's bytes start, and how many there are.
    private static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (starts: UInt64, long: [Int], count: Int) {
        var start = bytes.first == UInt8(ascii: "/") ? 1 : 0
        guard start < bytes.count, let base = bytes.baseAddress else { return (0, [], 0) }
        var (starts, long, count) = (UInt64(0), [Int](), 0)
        while true {
            if bytes.count <= 0xFF, count < 8 {
                starts |= UInt64(start) &<< (8 * count)
            } else {
                if long.isEmpty { long = (0..<count).map { Int(truncatingIfNeeded: starts &>> (8 * $0)) & 0xFF } }
                long.append(start)
            }
            count += 1
            guard let slash = memchr(base + start, Int32(UInt8(ascii: "/")), bytes.count - start) else {
                return (long.isEmpty ? starts : 0, long, count)
            }
            start = UnsafeRawPointer(base).distance(to: slash) + 1
        }
    }

    /// Segment `index`, decoded (bytes that are not UTF-8 become U+FFFD). An ASCII segment (an
    /// id, a key path: nearly every one) is made without its bytes checked again.
    subscript(index: Int) -> String {
        let place = bounds(of: index)
        let (text, escaped) = withBytes { bytes in
            let raw = UnsafeBufferPointer(rebasing: bytes[place])
            var (bits, escaped): (UInt8, Bool) = (0, false)  // every byte or-ed: below 0x80 if all are ASCII
            for byte in raw {
                bits |= byte
                escaped = escaped || byte == UInt8(ascii: "%")
            }
            return (bits < 0x80 ? String(validatedASCII: raw) : String(decoding: raw, as: UTF8.self), escaped)
        }
        return escaped ? PercentDecoding.decode(text) : text
    }

    /// Whether segment `index`, decoded, is `text` (ASCII without `%`), as `String` compares them.
    func segment(_ index: Int, is text: StaticString) -> Bool {
        segment(index, is: UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Whether the path matches `pattern`: as many segments, each literal equal to its segment (as
    /// `segment(_:is:)` compares), each parameter's segment a name (`isName`). Read in one look at
    /// the path's bytes; only a segment with an escape, or beyond ASCII, is decoded.
    func matches(_ pattern: PathPattern) -> Bool {
        guard count == pattern.count else { return false }
        let plainly = pattern.text.withUnsafeBytes { text in
            withBytes { bytes -> Bool? in
                for (literal, index) in pattern.literals {
                    let raw = UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[bounds(of: index)]))
                    let equal = Self.plainlyEqual(raw, UnsafeRawBufferPointer(rebasing: text[literal]))
                    if equal != true { return equal }
                }
                for (_, index) in pattern.parameters {
                    let name = Self.plainlyName(bytes[bounds(of: index)])
                    if name != true { return name }
                }
                return true
            }
        }
        if let plainly { return plainly }
        return pattern.literals.allSatisfy { literal, index in
            pattern.text.withUnsafeBytes { segment(index, is: UnsafeRawBufferPointer(rebasing: $0[literal])) }
        } && pattern.parameters.allSatisfy { isName($0.index) }
    }

    /// Whether segment `index`, decoded, is `text` (ASCII without `%`), as `String` compares them.
    /// The same bytes are equal (the segment is then ASCII without `%` too). Other bytes are not
    /// when the segment is ASCII without `%` (ASCII has one spelling); otherwise it is decoded to
    /// compare (a KELVIN SIGN, sent or encoded, is a `K` to `String`).
    private func segment(_ index: Int, is text: UnsafeRawBufferPointer) -> Bool {
        let place = bounds(of: index)
        let verdict = withBytes {
            Self.plainlyEqual(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: $0[place])), text)
        }
        return verdict ?? (self[index] == String(decoding: text, as: UTF8.self))
    }

    /// Whether the segments are `texts`, in order (each compared as `segment(_:is:)` does).
    func are(_ texts: StaticString...) -> Bool {
        count == texts.count && texts.indices.allSatisfy { segment($0, is: texts[$0]) }
    }

    /// Whether the path is in the API (its first segment is `v1`).
    var inAPI: Bool { !isEmpty && segment(0, is: "v1") }

    /// Whether segment `index` can name something (an id, a name, a key path), which are ASCII
    /// by the naming rules: decoded, it is 1 or more printable ASCII characters (0x20–0x7E). An
    /// empty segment, a control character or anything beyond ASCII never names anything (and a
    /// byte outside that range is still there once decoded).
    func isName(_ index: Int) -> Bool {
        let place = bounds(of: index)
        if let name = withBytes({ Self.plainlyName($0[place]) }) { return name }
        var decoded = self[index]
        return decoded.withUTF8 { !$0.isEmpty && $0.allSatisfy { (0x20...0x7E).contains($0) } }
    }

    /// Whether a segment's raw bytes, decoded, are `text` (ASCII without `%`); nil when only
    /// decoding can tell. The same bytes are equal; other bytes are not when the segment is ASCII
    /// without `%` (ASCII has one spelling).
    private static func plainlyEqual(_ raw: UnsafeRawBufferPointer, _ text: UnsafeRawBufferPointer) -> Bool? {
        if raw.count == text.count, raw.isEmpty || memcmp(raw.baseAddress!, text.baseAddress!, raw.count) == 0 {
            return true
        }
        return raw.contains { $0 >= 0x80 || $0 == UInt8(ascii: "%") } ? nil : false
    }

    /// Whether a segment's raw bytes name something (`isName`); nil when they hold an escape, which
    /// only decoding can tell. A byte outside 0x20–0x7E is still there once decoded.
    private static func plainlyName(_ raw: UnsafeBufferPointer<UInt8>.SubSequence) -> Bool? {
        guard !raw.isEmpty else { return false }
        var escaped = false
        for byte in raw {
            guard byte &- 0x20 <= 0x5E else { return false }  // below 0x20, or above 0x7E
            escaped = escaped || byte == UInt8(ascii: "%")
        }
        return escaped ? nil : true
    }

    /// Where segment `index` is in the path's bytes.
    @inline(__always)
    private func bounds(of index: Int) -> Range<Int> {
        start(of: index)..<(index &+ 1 < endIndex ? start(of: index &+ 1) &- 1 : length)
    }

    @inline(__always)
    private func start(of index: Int) -> Int {
        long.isEmpty ? Int(truncatingIfNeeded: starts &>> (8 &* index)) & 0xFF : long[index]
    }

    @inline(__always)
    private func withBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        if let result = path.utf8.withContiguousStorageIfAvailable(body) { return result }
        var path = path
        return path.withUTF8(body)
    }
}

/// A route's pattern (`/v1/objects/{id}/values/{keyPath}`), as `PathSegments.matches` reads it:
/// how many segments, its literal segments' bytes (ASCII without `%`), where its parameters are.
struct PathPattern: Sendable {
    let count: Int
    /// Where each `{name}` is in the path.
    let parameters: [(name: String, index: Int)]
    /// Each literal segment: where its bytes are in `text`, and where it is in the path.
    fileprivate let literals: [(bytes: Range<Int>, index: Int)]
    fileprivate let text: [UInt8]

    init(_ pattern: String) {
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: true)
        var parameters: [(name: String, index: Int)] = []
        var (literals, text): ([(bytes: Range<Int>, index: Int)], [UInt8]) = ([], [])
        for (index, segment) in segments.enumerated() {
            if segment.hasPrefix("{") && segment.hasSuffix("}") {
                parameters.append((String(segment.dropFirst().dropLast()), index))
            } else {
                precondition(segment.utf8.allSatisfy { $0 < 0x80 && $0 != UInt8(ascii: "%") }, "\(pattern): not plain")
                literals.append((text.count..<(text.count + segment.utf8.count), index))
                text += segment.utf8
            }
        }
        (count, self.parameters, self.literals, self.text) = (segments.count, parameters, literals, text)
    }
}
