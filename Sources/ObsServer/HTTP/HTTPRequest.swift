import Glibc

/// An HTTP method token.
struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    let rawValue: String
    /// The method's place among those the routes answer (`names`), from 1; 0 for any other.
    /// Equal methods have equal tags, so most comparisons (several per request) compare these.
    private let tag: UInt8

    init(rawValue: String) {
        self.rawValue = rawValue
        tag = Self.names.firstIndex(of: rawValue).map { UInt8($0 + 1) } ?? 0
    }

    private static let names = ["PUT", "GET", "POST", "DELETE", "HEAD", "PATCH", "OPTIONS"]

    static let put = HTTPMethod(rawValue: "PUT")
    static let get = HTTPMethod(rawValue: "GET")
    static let post = HTTPMethod(rawValue: "POST")
    static let delete = HTTPMethod(rawValue: "DELETE")
    static let head = HTTPMethod(rawValue: "HEAD")
    static let patch = HTTPMethod(rawValue: "PATCH")
    static let options = HTTPMethod(rawValue: "OPTIONS")

    var description: String { rawValue }

    static func == (a: HTTPMethod, b: HTTPMethod) -> Bool {
        a.tag == b.tag && (a.tag != 0 || a.rawValue == b.rawValue)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(rawValue)
    }
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
    /// The path split at `/`, each segment percent-decoded on its own (`PathSegments`).
    let segments: PathSegments
    /// Query arguments, percent-decoded; a repeated name keeps its last value.
    let query: [String: String]
    let headers: HTTPHeaders
    let body: [UInt8]

    /// `rawQuery`: arguments as libmicrohttpd hands them over (`+` already a space, `%XX` not decoded).
    init(method: HTTPMethod, path: String, rawQuery: [String: String], headers: HTTPHeaders, body: [UInt8]) {
        self.method = method
        self.segments = PathSegments(path)
        var query: [String: String] = [:]
        if !rawQuery.isEmpty {
            for (name, value) in rawQuery { query[PercentDecoding.decode(name)] = PercentDecoding.decode(value) }
        }
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The path as sent (still percent-encoded), without the query string.
    var path: String { segments.path }
}

/// Percent-decoding of URL parts (RFC 3986), byte by byte.
///
/// A `%` not followed by two hex digits stays as it is. Decoded bytes that are not UTF-8
/// (overlong forms included) become U+FFFD, so they can never spell a valid id or key path.
enum PercentDecoding {
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
