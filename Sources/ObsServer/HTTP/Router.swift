import Logging
import ObservationCore

/// Path parameters of a matched route (`{id}` → value): the request's segments, read through
/// the route's table of where each parameter is (nothing is built per request).
struct RouteParameters: Sendable {
    fileprivate var segments: [String] = []
    /// At most a few per route: a linear search beats hashing here.
    fileprivate var positions: [(name: String, index: Int)] = []
    /// Who is calling (`AuthMiddleware`): what its commands carry and its reads may show.
    var caller = Caller.nobody

    /// The value of `{name}` in the route's pattern.
    subscript(name: String) -> String {
        guard let index = positions.first(where: { $0.name == name })?.index else { return "" }
        return segments[index]
    }
}

/// A route handler: throws `APIError` or `CoreError` for error answers.
typealias RouteHandler = @Sendable (HTTPRequest, RouteParameters) throws -> Reply

/// Collects routes; `build()` freezes them into an immutable `Router`.
struct RouterBuilder {
    fileprivate var routes: [Route] = []

    /// Adds `handler` for `method` on `pattern`, e.g. `/v1/objects/{id}/values/{keyPath}`.
    mutating func on(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping RouteHandler) {
        let segments = pattern.split(separator: "/").map { part in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? Segment.parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        let label = RouteLabel(name: "\(method) \(pattern)", number: RouteLabel.firstRouteNumber + routes.count)
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler, label: label))
    }

    /// The frozen router. `fallback` answers GET requests no route matches (static files).
    func build(logger: Logger, fallback: RouteHandler? = nil) -> Router {
        let longest = routes.map(\.segments.count).max() ?? 0
        var bySegments = [[Route]](repeating: [], count: longest + 1)
        for route in routes { bySegments[route.segments.count].append(route) }
        return Router(all: routes, bySegments: bySegments, fallback: fallback, logger: logger)
    }
}

fileprivate enum Segment: Sendable, Equatable {
    case literal(String)
    case parameter(String)
}

/// A class: the router looks at several per request, and a reference is cheaper to pass
/// around than a copy of every field.
fileprivate final class Route: Sendable {
    /// Every parameter in a path (ids, names, key paths) is ASCII by the naming rules: an empty
    /// segment, a control character or anything beyond ASCII never names anything, so no route
    /// matches it (404). Spaces and other printable characters reach the handler, which says
    /// what is wrong with the name (400). (Swift compares strings by canonical equivalence:
    /// without this, a KELVIN SIGN would name the object `K`.)
    static func isParameter(_ segment: String) -> Bool {
        var segment = segment
        return segment.withUTF8 { bytes in !bytes.isEmpty && bytes.allSatisfy { (0x20...0x7E).contains($0) } }
    }

    let method: HTTPMethod
    let pattern: String
    let segments: [Segment]
    let handler: RouteHandler
    /// `GET /v1/objects/{id}`: the route's name in figures.
    let label: RouteLabel
    /// Where each `{name}` is in the path.
    let positions: [(name: String, index: Int)]

    init(method: HTTPMethod, pattern: String, segments: [Segment], handler: @escaping RouteHandler, label: RouteLabel) {
        self.method = method
        self.pattern = pattern
        self.segments = segments
        self.handler = handler
        self.label = label
        positions = segments.enumerated().compactMap { index, segment in
            guard case .parameter(let name) = segment else { return nil }
            return (name, index)
        }
    }

    /// Whether a path of as many segments as the pattern's matches it.
    func matches(_ parts: [String]) -> Bool {
        // Literals first: most routes are ruled out by them.
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, literal != part { return false }
        }
        return positions.allSatisfy { Self.isParameter(parts[$0.index]) }
    }
}

struct Router: Sendable {
    /// In registration order.
    fileprivate let all: [Route]
    /// The routes whose patterns have `n` segments at index `n`.
    fileprivate let bySegments: [[Route]]
    let fallback: RouteHandler?
    let logger: Logger

    /// The answer of the route that matches (405 with `Allow`, or 404, when none does); the
    /// route's label goes to `context` (figures).
    func respond(to request: HTTPRequest, _ context: any RequestContext) -> Reply {
        let parts = request.segments
        let method = request.method == .head ? HTTPMethod.get : request.method
        let candidates = parts.count < bySegments.count ? bySegments[parts.count] : []
        for route in candidates where route.method == method && route.matches(parts) {
            context.route = route.label
            return run(
                route.handler, request,
                RouteParameters(segments: parts, positions: route.positions, caller: context.caller))
        }
        let allowed = candidates.filter { $0.matches(parts) }.map(\.method)
        if !allowed.isEmpty { return .now(APIError.methodNotAllowed(request.method, allowed: allowed).response) }
        if let fallback, method == .get, parts.first != "v1" {
            context.route = .staticFiles
            return run(fallback, request, RouteParameters())
        }
        return .now(APIError.routeNotFound(request.path).response)
    }

    /// Every route as (method, pattern), in registration order (the OpenAPI document's test).
    var endpoints: [(method: HTTPMethod, pattern: String)] {
        all.map { ($0.method, $0.pattern) }
    }

    private func run(_ handler: RouteHandler, _ request: HTTPRequest, _ parameters: RouteParameters) -> Reply {
        do {
            return try handler(request, parameters)
        } catch let error as APIError {
            return .now(error.response)
        } catch let error as CoreError {
            return .now(APIError(error).response)
        } catch {
            logger.error(
                "unexpected error",
                metadata: [
                    "path": "\(request.path)", "error": "\(error)", "requestId": "\(request.headers.requestID ?? "")",
                ])
            return .now(APIError.internalError.response)
        }
    }
}
