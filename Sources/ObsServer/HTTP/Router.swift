import Logging
import ObservationCore

/// Path parameters of a matched route (`{id}` → value).
struct RouteParameters: Sendable {
    /// At most a few pairs per route: a linear search beats hashing here.
    fileprivate var values: [(name: String, value: String)] = []

    /// The value of `{name}` in the route's pattern.
    subscript(name: String) -> String { values.first { $0.name == name }?.value ?? "" }
}

/// A route handler: throws `APIError` or `CoreError` for error answers.
typealias RouteHandler = @Sendable (HTTPRequest, RouteParameters) throws -> HTTPResponse

/// Collects routes; `build()` freezes them into an immutable `Router`.
struct RouterBuilder {
    fileprivate var routes: [Route] = []

    /// Adds `handler` for `method` on `pattern`, e.g. `/v1/objects/{id}/values/{keyPath}`.
    mutating func on(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping RouteHandler) {
        let segments = pattern.split(separator: "/").map { part in
            part.hasPrefix("{") && part.hasSuffix("}")
                ? Segment.parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        routes.append(Route(method: method, pattern: pattern, segments: segments, handler: handler))
    }

    /// The frozen router. `fallback` answers GET requests no route matches (static files).
    func build(logger: Logger, fallback: RouteHandler? = nil) -> Router {
        Router(routes: Dictionary(grouping: routes, by: \.segments.count), fallback: fallback, logger: logger)
    }
}

fileprivate enum Segment: Sendable, Equatable {
    case literal(String)
    case parameter(String)
}

fileprivate struct Route: Sendable {
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
    let label: String

    init(method: HTTPMethod, pattern: String, segments: [Segment], handler: @escaping RouteHandler) {
        self.method = method
        self.pattern = pattern
        self.segments = segments
        self.handler = handler
        self.label = "\(method) \(pattern)"
    }

    func match(_ parts: [String]) -> RouteParameters? {
        // Literals first: most routes are ruled out without building parameters.
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, literal != part { return nil }
        }
        var parameters = RouteParameters()
        for (segment, part) in zip(segments, parts) {
            guard case .parameter(let name) = segment else { continue }
            guard Self.isParameter(part) else { return nil }
            parameters.values.append((name, part))
        }
        return parameters
    }
}

struct Router: Sendable {
    fileprivate let routes: [Int: [Route]]
    let fallback: RouteHandler?
    let logger: Logger

    func respond(to request: HTTPRequest) -> HTTPResponse {
        let parts = request.segments
        let method = request.method == .head ? HTTPMethod.get : request.method
        var allowed: [HTTPMethod] = []
        for route in routes[parts.count] ?? [] {
            guard let parameters = route.match(parts) else { continue }
            if route.method == method { return run(route.handler, request, parameters, label: route.label) }
            allowed.append(route.method)
        }
        if !allowed.isEmpty { return APIError.methodNotAllowed(request.method, allowed: allowed).response }
        if let fallback, method == .get, parts.first != "v1" {
            return run(fallback, request, RouteParameters(), label: "GET static")
        }
        return APIError.routeNotFound(request.path).response
    }

    /// Every route as (method, pattern), in registration order (the OpenAPI document's test).
    var endpoints: [(method: HTTPMethod, pattern: String)] {
        routes.values.joined().map { ($0.method, $0.pattern) }
    }

    private func run(_ handler: RouteHandler, _ request: HTTPRequest, _ parameters: RouteParameters, label: String)
        -> HTTPResponse
    {
        var response: HTTPResponse
        do {
            response = try handler(request, parameters)
        } catch let error as APIError {
            response = error.response
        } catch let error as CoreError {
            response = APIError(error).response
        } catch {
            logger.error("unexpected error", metadata: ["path": "\(request.path)", "error": "\(error)"])
            response = APIError.internalError.response
        }
        response.route = label
        return response
    }
}
