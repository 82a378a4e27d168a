import Foundation

/// Cross-origin access for browsers (section 9, `--cors-origins a,b` or `*`).
///
/// For an allowed origin, every answer (errors and event streams included) carries
/// `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers`; with a list, every answer
/// carries `Vary: Origin` too (it depends on the origin, whoever asks), with `*` none does (every
/// answer carries `*`). A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`)
/// from an allowed origin is answered 204 with the methods and request headers the API takes,
/// before any token check (browsers send none with it). An origin not allowed gets no CORS
/// header, and its preflight is answered as any `OPTIONS` is. Credentials (cookies) are never
/// allowed: the API takes bearer tokens.
///
/// Immutable and `Sendable`: built once from the configuration.
struct CORSPolicy: Sendable {
    private enum Origins: Sendable {
        case any
        /// Lowercased (`https://app.example.com:8443`); browsers send origins in lowercase.
        case list(Set<String>)
    }

    private let origins: Origins

    /// The methods the API answers.
    static let allowMethods = "GET, HEAD, POST, PUT, PATCH, DELETE"
    /// The request headers the contract lets clients send, and `X-Request-Id`.
    static let allowHeaders =
        "Authorization, Content-Type, Accept, Last-Event-ID, Obs-Client, Idempotency-Key, X-Request-Id"
    /// The answer headers a browser script may read besides the safelisted ones.
    static let exposeHeaders = "Obs-Client, Idempotent-Replayed, Retry-After, Location, Allow, X-Request-Id"
    /// How long a browser may keep a preflight's answer, in seconds.
    static let maxAge = 600

    /// `*` alone, or origins (`scheme://host[:port]`, no path); blanks around them and empty
    /// entries are ignored. Refuses anything else, and `*` next to origins.
    init(origins given: [String]) throws(ConfigError) {
        let entries = given.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if entries == ["*"] {
            origins = .any
            return
        }
        guard !entries.isEmpty else { throw ConfigError("--cors-origins names no origin (a,b or *)") }
        var list = Set<String>()
        for entry in entries {
            guard entry != "*" else { throw ConfigError("--cors-origins: * allows every origin: give it alone") }
            guard Self.isOrigin(entry) else {
                throw ConfigError(
                    "--cors-origins: '\(entry)' is not an origin (scheme://host or scheme://host:port, no path)")
            }
            list.insert(entry.lowercased())
        }
        origins = .list(list)
    }

    /// `scheme://host[:port]`: a scheme of letters, digits, `+ - .`; a host of printable ASCII
    /// without `/ ? # @ *`; a port of digits.
    private static func isOrigin(_ text: String) -> Bool {
        guard let separator = text.range(of: "://") else { return false }
        let scheme = text[..<separator.lowerBound]
        let authority = text[separator.upperBound...]
        guard let first = scheme.unicodeScalars.first, first.isASCIILetter,
            scheme.unicodeScalars.allSatisfy({
                $0.isASCIILetter || ("0"..."9").contains($0) || "+-.".unicodeScalars.contains($0)
            })
        else { return false }
        var host = authority
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            let port = authority[authority.index(after: colon)...]
            guard !port.isEmpty, port.allSatisfy(\.isASCIIDigit) else { return false }
            host = authority[..<colon]
        }
        return !host.isEmpty
            && host.unicodeScalars.allSatisfy {
                (0x21...0x7E).contains($0.value) && !"/?#@*".unicodeScalars.contains($0)
            }
    }

    /// Whether answers to `origin` may be read by its scripts.
    func allows(_ origin: String) -> Bool {
        switch origins {
        case .any: true
        case .list(let list): list.contains(origin.lowercased())
        }
    }

    /// The CORS headers of any answer to a request from `origin` (nil: the request named none).
    func answerHeaders(origin: String?) -> [(name: String, value: String)] {
        switch origins {
        case .any:
            return [("Access-Control-Allow-Origin", "*"), ("Access-Control-Expose-Headers", Self.exposeHeaders)]
        case .list(let list):
            guard let origin, list.contains(origin.lowercased()) else { return [("Vary", "Origin")] }
            return [
                ("Access-Control-Allow-Origin", origin), ("Access-Control-Expose-Headers", Self.exposeHeaders),
                ("Vary", "Origin"),
            ]
        }
    }

    /// The answer to a preflight from an allowed origin (nil: not one; the request goes on as
    /// any other). The daemon adds `answerHeaders` to it, like to every answer.
    func preflight(_ request: HTTPRequest) -> HTTPResponse? {
        guard request.method == .options, let origin = request.headers.origin, allows(origin),
            request.headers.corsRequestMethod != nil
        else { return nil }
        var response = HTTPResponse.noContent
        response.headers = [
            ("Access-Control-Allow-Methods", Self.allowMethods), ("Access-Control-Allow-Headers", Self.allowHeaders),
            ("Access-Control-Max-Age", String(Self.maxAge)),
        ]
        return response
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
