/// An id or notification-name pattern of a scope (section 13): `*` matches any run of
/// characters (none included); every other character matches itself.
public struct Glob: Sendable, Hashable {
    /// The pattern as the client wrote it.
    public let pattern: String
    /// The literal pieces between the stars, and whether it starts and ends with one.
    private let pieces: [[UInt8]]
    private let anchoredStart: Bool
    private let anchoredEnd: Bool
    /// The common shapes, matched without the general walk: no star, or one star at the end.
    private let exact: [UInt8]?
    private let prefix: [UInt8]?

    /// `allowed`: whether a character (not `*`) may appear (the id alphabet, or a notification
    /// name's); nil when `pattern` is empty, too long or holds one that may not.
    init?(_ pattern: String, maxLength: Int, allowed: (Unicode.Scalar) -> Bool) {
        guard (1...maxLength).contains(pattern.unicodeScalars.count),
            pattern.unicodeScalars.allSatisfy({ $0 == "*" || allowed($0) })
        else { return nil }
        self.pattern = pattern
        let bytes = Array(pattern.utf8)
        anchoredStart = bytes.first != UInt8(ascii: "*")
        anchoredEnd = bytes.last != UInt8(ascii: "*")
        pieces = bytes.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: true).map(Array.init)
        let stars = bytes.count { $0 == UInt8(ascii: "*") }
        exact = stars == 0 ? bytes : nil
        prefix = stars == 1 && !anchoredEnd ? Array(bytes.dropLast()) : nil
    }

    /// Whether `text` matches: the pieces in order, the first at the start and the last at the
    /// end unless a star stands there. Leftmost matching of each piece is enough (a star
    /// between two pieces absorbs whatever lies between them), so this is linear in practice.
    public func matches(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            if let exact { return bytes.elementsEqual(exact) }
            if let prefix { return bytes.count >= prefix.count && bytes.prefix(prefix.count).elementsEqual(prefix) }
            return matches(bytes[...])
        }
    }

    private func matches(_ whole: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var text = whole
        if pieces.isEmpty { return !anchoredStart ? true : text.isEmpty }
        var remaining = pieces[...]
        if anchoredStart {
            let first = remaining.removeFirst()
            guard text.starts(with: first) else { return false }
            text = text.dropFirst(first.count)
            if remaining.isEmpty { return anchoredEnd ? text.isEmpty : true }
        }
        let last = anchoredEnd ? remaining.popLast() : nil
        for piece in remaining {
            guard let range = Self.firstRange(of: piece, in: text) else { return false }
            text = text[range.upperBound...]
        }
        guard let last else { return true }
        return text.count >= last.count && text.suffix(last.count).elementsEqual(last)
    }

    private static func firstRange(of piece: [UInt8], in text: Slice<UnsafeBufferPointer<UInt8>>) -> Range<Int>? {
        guard piece.count <= text.count else { return nil }
        var start = text.startIndex
        while start + piece.count <= text.endIndex {
            if text[start..<(start + piece.count)].elementsEqual(piece) { return start..<(start + piece.count) }
            start += 1
        }
        return nil
    }
}
