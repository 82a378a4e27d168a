import Foundation

/// `--webhook-hosts` (section 16): the hosts delivering observers may push to, as `host` or
/// `host:port` patterns where `*` matches any run of characters (`127.0.0.1:*,*.internal`).
/// A pattern without a port allows any port; an IPv6 address is written in brackets (`[::1]:*`).
/// Names compare without case. Without the flag nothing is allowed.
///
/// A URL's host and port must match when the observer is made; before each connection the
/// address the name resolved to must match too (so a name that resolves somewhere the list
/// does not allow is never connected to: list the addresses as well as the names).
struct WebhookHosts: Sendable {
    private let patterns: [(host: [UInt8], port: [UInt8]?)]

    /// Nothing allowed.
    static let none = WebhookHosts(patterns: [])

    private init(patterns: [(host: [UInt8], port: [UInt8]?)]) { self.patterns = patterns }

    init(_ list: String) throws(ConfigError) {
        var patterns: [(host: [UInt8], port: [UInt8]?)] = []
        for item in list.split(separator: ",") {
            let text = item.trimmingCharacters(in: .whitespaces).lowercased()
            guard !text.isEmpty, !text.contains("/"), !text.contains("@") else {
                throw ConfigError("--webhook-hosts: '\(item)' is not a host or host:port pattern")
            }
            // The port is what follows the last colon outside brackets ([::1]:80, a.b:*, 10.0.0.1).
            var host = Substring(text)
            var port: Substring?
            if let colon = text.lastIndex(of: ":"), !text[colon...].contains("]"),
                text.hasPrefix("[") || text.firstIndex(of: ":") == colon
            {
                host = text[..<colon]
                port = text[text.index(after: colon)...]
            }
            if let port, port.isEmpty || !port.allSatisfy({ $0 == "*" || $0.isASCII && $0.isNumber }) {
                throw ConfigError("--webhook-hosts: '\(item)' has a port that is not a number or *")
            }
            patterns.append((Array(host.utf8), port.map { Array($0.utf8) }))
        }
        guard !patterns.isEmpty else { throw ConfigError("--webhook-hosts: the list is empty") }
        self.patterns = patterns
    }

    /// Whether `host` (a name, an IPv4 address, or an IPv6 address with or without brackets)
    /// and `port` match a pattern.
    func permits(host: String, port: Int) -> Bool {
        var name = host.lowercased()
        if name.contains(":"), !name.hasPrefix("[") { name = "[\(name)]" }
        let (hostBytes, portBytes) = (Array(name.utf8), Array(String(port).utf8))
        return patterns.contains { pattern in
            Self.matches(pattern.host[...], hostBytes[...])
                && pattern.port.map { Self.matches($0[...], portBytes[...]) } ?? true
        }
    }

    /// `*` matches any run of bytes, anything else itself.
    private static func matches(_ pattern: ArraySlice<UInt8>, _ text: ArraySlice<UInt8>) -> Bool {
        guard let first = pattern.first else { return text.isEmpty }
        if first == UInt8(ascii: "*") {
            let rest = pattern.dropFirst()
            return text.indices.contains { matches(rest, text[$0...]) } || matches(rest, text[text.endIndex...])
        }
        guard let head = text.first, head == first else { return false }
        return matches(pattern.dropFirst(), text.dropFirst())
    }
}
