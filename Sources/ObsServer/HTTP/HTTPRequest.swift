import Glibc

/// An HTTP method token.
struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    let rawValue: String

    static let get = HTTPMethod(rawValue: "GET")
    static let head = HTTPMethod(rawValue: "HEAD")
    static let post = HTTPMethod(rawValue: "POST")
    static let put = HTTPMethod(rawValue: "PUT")
    static let patch = HTTPMethod(rawValue: "PATCH")
    static let delete = HTTPMethod(rawValue: "DELETE")
    static let options = HTTPMethod(rawValue: "OPTIONS")

    var description: String { rawValue }
}

extension HTTPMethod {
    /// The methods the routes answer, the most frequent first.
    private static let known: [(name: StaticString, method: HTTPMethod)] = [
        ("PUT", .put), ("GET", .get), ("POST", .post), ("DELETE", .delete), ("HEAD", .head), ("PATCH", .patch),
        ("OPTIONS", .options),
    ]

    /// The method of a request line: one of the constants when it is one (no string is made).
    init(cString name: UnsafePointer<CChar>) {
        let length = strlen(name)
        func named(_ known: StaticString) -> Bool {
            length == known.utf8CodeUnitCount && memcmp(name, known.utf8Start, length) == 0
        }
        self = Self.known.first { named($0.name) }?.method ?? HTTPMethod(rawValue: String(cString: name))
    }
}

/// The request headers the service reads. Collected once per request by the daemon.
struct HTTPHeaders: Sendable {
    var contentType: String?
    var authorization: String?
    var accept: String?
    var lastEventID: String?
    /// `Obs-Client`: the writer's name (section 7.3).
    var client: String?
    /// `Idempotency-Key` (section 7.3).
    var idempotencyKey: String?
    /// `Origin` and `Access-Control-Request-Method` (CORS).
    var origin: String?
    var corsRequestMethod: String?
    /// `X-Request-Id`: the client's, or one the daemon made (always set on a request handed over).
    var requestID: String?
}

/// A complete HTTP request: line, the headers the service reads, query and body. A class:
/// it goes through several layers (authentication, routing, the handler) and is never changed,
/// so passing it is one reference, not a copy of every field.
final class HTTPRequest: Sendable {
    let method: HTTPMethod
    /// The path as sent (still percent-encoded), without the query string.
    let path: String
    /// The path split at `/`, then each segment percent-decoded on its own (section 1): `%2F`
    /// is a character of its segment, never a separator, and `%00` is a NUL inside it, never
    /// the end of the path. `/` is `[]`; empty segments (`//`, a trailing `/`) are kept.
    let segments: [String]
    /// Query arguments, percent-decoded; a repeated name keeps its last value.
    let query: [String: String]
    let headers: HTTPHeaders
    let body: [UInt8]

    /// `rawQuery`: arguments as libmicrohttpd hands them over (`+` already a space, `%XX` not decoded).
    init(method: HTTPMethod, path: String, rawQuery: [String: String], headers: HTTPHeaders, body: [UInt8]) {
        self.method = method
        self.path = path
        self.segments = PercentDecoding.segments(of: path)
        var query: [String: String] = [:]
        if !rawQuery.isEmpty {
            for (name, value) in rawQuery { query[PercentDecoding.decode(name)] = PercentDecoding.decode(value) }
        }
        self.query = query
        self.headers = headers
        self.body = body
    }
}

/// Percent-decoding of URL parts (RFC 3986), byte by byte.
///
/// A `%` not followed by two hex digits stays as it is. Decoded bytes that are not UTF-8
/// (overlong forms included) become U+FFFD, so they can never spell a valid id or key path.
enum PercentDecoding {
    /// The segments of a path: `"/a/b%2Fc"` is `["a", "b/c"]`, `"/"` is `[]`.
    /// One pass over the bytes (every request's path goes through here).
    static func segments(of path: String) -> [String] {
        var path = path
        return path.withUTF8 { bytes in
            var start = bytes.first == UInt8(ascii: "/") ? 1 : 0
            guard start < bytes.count else { return [] }
            var segments: [String] = []
            segments.reserveCapacity(8)
            var escaped = false  // the segment holds a `%`: decode it
            for index in start...bytes.count {
                guard index < bytes.count, bytes[index] != UInt8(ascii: "/") else {
                    let segment = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                    segments.append(escaped ? decode(segment) : segment)
                    start = index + 1
                    escaped = false
                    continue
                }
                escaped = escaped || bytes[index] == UInt8(ascii: "%")
            }
            return segments
        }
    }

    static func decode(_ text: String) -> String { decode(Substring(text).utf8) }

    static func decode(_ raw: Substring.UTF8View) -> String {
        guard raw.contains(UInt8(ascii: "%")) else { return String(Substring(raw)) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(raw.count)
        var index = raw.startIndex
        while index < raw.endIndex {
            let byte = raw[index]
            if byte == UInt8(ascii: "%"), let high = raw.index(index, offsetBy: 1, limitedBy: raw.endIndex),
                high < raw.endIndex, let low = raw.index(high, offsetBy: 1, limitedBy: raw.endIndex),
                low < raw.endIndex,
                let value = hexValue(raw[high]).flatMap({ h in hexValue(raw[low]).map { h << 4 | $0 } })
            {
                bytes.append(value)
                index = raw.index(after: low)
            } else {
                bytes.append(byte)
                index = raw.index(after: index)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
