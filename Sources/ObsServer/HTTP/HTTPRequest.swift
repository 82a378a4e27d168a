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

/// The request headers the service reads. Collected once per request by the daemon.
struct HTTPHeaders: Sendable {
    var contentType: String?
    var authorization: String?
    var accept: String?
    var lastEventID: String?
}

/// A complete HTTP request: line, the headers the service reads, query and body.
struct HTTPRequest: Sendable {
    let method: HTTPMethod
    /// The path, percent-decoded, without the query string.
    let path: String
    /// Query arguments, percent-decoded; a repeated name keeps its last value.
    let query: [String: String]
    let headers: HTTPHeaders
    let body: [UInt8]
}
