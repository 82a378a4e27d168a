import ObservationCore

/// A complete HTTP answer: status, headers and body (the head of a stream, whose body is the
/// stream: see `Reply`).
struct HTTPResponse: Sendable {
    var status: Int
    var contentType: String
    var headers: [(name: String, value: String)] = []
    var body: [UInt8]
    static let jsonContentType = "application/json; charset=utf-8"

    /// A JSON response whose body `write` produces.
    static func json(status: Int = 200, _ write: (inout JSONWriter) -> Void) -> HTTPResponse {
        HTTPResponse(status: status, contentType: jsonContentType, body: JSONWriter.encode(write))
    }

    /// A JSON response with `value` as its body.
    static func json(_ value: JSON, status: Int = 200) -> HTTPResponse {
        json(status: status) { $0.write(value) }
    }

    /// `{"revision": n}`, the answer of most writes.
    static func revision(_ revision: Int) -> HTTPResponse {
        json { writer in
            writer.raw("{\"revision\":")
            writer.write(revision)
            writer.raw("}")
        }
    }

    /// Adds a member to a JSON object body (the token a creation answer shows once).
    mutating func insertMember(_ key: String, _ value: JSON) {
        guard case .object(var members)? = try? JSONParser.parse(body) else { return }
        members[key] = value
        body = JSON.object(members).encoded()
    }

    /// 204 No Content.
    static let noContent = HTTPResponse(status: 204, contentType: "", body: [])
}

/// A route's name in figures (`GET /v1/objects/{id}`) and its number, under which figures
/// keep it: an answer's figures go to a slot by number, not by hashing the name.
struct RouteLabel: Sendable, Equatable {
    let name: String
    /// Distinct for each name a server's router gives (the fixed ones below, then its routes').
    let number: Int

    /// The route of an answer no route made.
    static let unrouted = RouteLabel(name: "unmatched", number: 0)
    /// A CORS preflight, answered before routing.
    static let preflight = RouteLabel(name: "OPTIONS preflight", number: 1)
    /// The router's fallback (static files).
    static let staticFiles = RouteLabel(name: "GET static", number: 2)
    /// The first number a router gives its routes.
    static let firstRouteNumber = 3

    static func == (a: RouteLabel, b: RouteLabel) -> Bool { a.number == b.number }
}
