import Logging
import ObservationCore

/// Path parameters of a matched route (`{id}` → value): the request's segments, read through
/// the route's table of where each parameter is (a value is decoded when it is read).
struct RouteParameters: Sendable {
    fileprivate let request: HTTPRequest
    /// At most a few per route: a linear search beats hashing here.
    fileprivate var positions: [(name: String, index: Int)] = []
    /// Who is calling (`AuthMiddleware`): what its commands carry and its reads may show.
    var caller = Caller.nobody

    /// The value of `{name}` in the route's pattern.
    subscript(name: String) -> String {
        guard let index = positions.first(where: { $0.name == name })?.index else { return "" }
        return request.segments[index]
    }
}

/// A route handler: throws `APIError` or `CoreError` for error answers.
typealias RouteHandler = @Sendable (HTTPRequest, RouteParameters) throws -> Reply

/// Collects routes; `build()` freezes them into an immutable `Router`.
struct RouterBuilder {
    fileprivate var routes: [Route] = []

    /// Adds `handler` for `method` on `pattern`, e.g. `/v1/objects/{id}/values/{keyPath}`.
    mutating func on(_ method: HTTPMethod, _ pattern: String, _ handler: @escaping RouteHandler) {
        let label = RouteLabel(name: "\(method) \(pattern)", number: RouteLabel.firstRouteNumber + routes.count)
        routes.append(Route(method: method, pattern: pattern, handler: handler, label: label))
    }

    /// The frozen router. `fallback` answers GET requests no route matches (static files).
    func build(logger: Logger, fallback: RouteHandler? = nil) -> Router {
        let longest = routes.map(\.path.count).max() ?? 0
        var bySegments = [[Route]](repeating: [], count: longest + 1)
        for route in routes { bySegments[route.path.count].append(route) }
        return Router(all: routes, bySegments: bySegments, fallback: fallback, logger: logger)
    }
}

/// A class: the router looks at several per request, and a reference is cheaper to pass
/// around than a copy of every field.
fileprivate final class Route: Sendable {
    let method: HTTPMethod
    let pattern: String
    let path: PathPattern
    let handler: RouteHandler
    /// `GET /v1/objects/{id}`: the route's name in figures.
    let label: RouteLabel

    init(method: HTTPMethod, pattern: String, handler: @escaping RouteHandler, label: RouteLabel) {
        self.method = method
        self.pattern = pattern
        path = PathPattern(pattern)
        self.handler = handler
        self.label = label
    }

    /// Whether a path of as many segments as the pattern's matches it. A parameter must be a
    /// name (`PathSegments.isName`): any other segment names nothing, so no route matches it
    /// (404); spaces and other printable characters reach the handler, which says what is wrong
    /// with the name (400).
    func matches(_ segments: PathSegments) -> Bool { segments.matches(path) }
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
        let path = request.segments
        let method = request.method == .head ? HTTPMethod.get : request.method
        let candidates = path.count < bySegments.count ? bySegments[path.count] : []
        for route in candidates where route.method == method && route.matches(path) {
            context.route = route.label
            return run(
                route.handler, request,
                RouteParameters(request: request, positions: route.path.parameters, caller: context.caller))
        }
        let allowed = candidates.filter { $0.matches(path) }.map(\.method)
        if !allowed.isEmpty { return .now(APIError.methodNotAllowed(request.method, allowed: allowed).response) }
        if let fallback, method == .get, !path.inAPI {
            context.route = .staticFiles
            return run(fallback, request, RouteParameters(request: request))
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
