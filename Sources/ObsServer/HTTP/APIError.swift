import ObservationCore

/// An error answer: status, stable code, message and details (section 2 of the contract).
///
/// Core errors map to statuses here, and only here.
struct APIError: Error, Sendable {
    let status: Int
    let code: String
    let message: String
    var details: JSONObject = [:]
    var headers: [(name: String, value: String)] = []

    init(status: Int, code: String, message: String, details: JSONObject = [:]) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
    }

    init(_ error: CoreError) {
        self.init(
            status: Self.status(of: error.code), code: error.code.rawValue, message: error.message,
            details: error.details)
        if error.code == .unavailable || error.code == .outcomeUnknown {
            let seconds = if case .int(let seconds)? = error.details["retryAfter"] { seconds } else { 1 }
            headers = [("Retry-After", String(seconds))]
        }
    }

    static func status(of code: CoreError.Code) -> Int {
        switch code {
        case .invalidJSON, .invalidRequest, .invalidName, .invalidKeyPath, .unknownKeyPath, .typeMismatch,
            .notACollection, .indexOutOfRange, .readOnly:
            400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict, .idempotencyKeyReused: 409
        case .revisionMismatch, .conditionFailed: 412
        case .limitExceeded: 429
        case .payloadTooLarge: 413
        case .unavailable: 503
        case .outcomeUnknown: 504
        }
    }

    static func routeNotFound(_ path: String) -> APIError {
        APIError(status: 404, code: "notFound", message: "no route for \(path)")
    }

    static func methodNotAllowed(_ method: HTTPMethod, allowed: [HTTPMethod]) -> APIError {
        let allow = allowed.map(\.rawValue).joined(separator: ", ")
        var error = APIError(
            status: 405, code: "methodNotAllowed", message: "\(method) is not allowed here; use \(allow)",
            details: ["allow": .array(allowed.map { .string($0.rawValue) })])
        error.headers = [("Allow", allow)]
        return error
    }

    static func payloadTooLarge(limit: Int) -> APIError {
        APIError(
            status: 413, code: "payloadTooLarge", message: "the request body is over the limit of \(limit) bytes",
            details: ["limit": .int(limit)])
    }

    static func unsupportedMediaType(_ contentType: String) -> APIError {
        APIError(
            status: 415, code: "unsupportedMediaType",
            message: "the body must be JSON (Content-Type: application/json), not \(contentType)")
    }

    static let unauthorized = APIError(
        status: 401, code: "unauthorized",
        message: "a valid token is required: send Authorization: Bearer <token>")

    static let forbidden = APIError(
        status: 403, code: "forbidden",
        message: "this token does not grant access to this resource")

    static let internalError = APIError(
        status: 500, code: "internal", message: "internal error; the request changed nothing")

    /// The error as an HTTP response with the contract's JSON body.
    var response: HTTPResponse {
        var response = HTTPResponse.json(status: status) { writer in
            writer.raw("{\"error\":{\"code\":")
            writer.write(code)
            writer.raw(",\"message\":")
            writer.write(message)
            writer.raw(",\"details\":")
            writer.write(.object(details))
            writer.raw("}}")
        }
        response.headers = headers
        return response
    }
}
