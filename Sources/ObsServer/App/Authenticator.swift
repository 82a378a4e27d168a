/// Checks the service token (`--token`) on every request that needs it.
///
/// Open without a token: `GET /healthz`, `GET /openapi.json` and the static
/// dashboard files. The comparison takes the same time wherever the first
/// difference is, so the token cannot be guessed byte by byte from timings.
struct Authenticator: Sendable {
    private let expected: [UInt8]?

    init(token: String?) {
        expected = token.map { Array("Bearer \($0)".utf8) }
    }

    /// Why `request` is refused, or nil when it may proceed.
    func refusal(for request: HTTPRequest) -> APIError? {
        guard let expected, !isOpen(request) else { return nil }
        guard let given = request.headers.authorization, Self.constantTimeEqual(Array(given.utf8), expected) else {
            return .unauthorized
        }
        return nil
    }

    private func isOpen(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        if request.path == "/healthz" || request.path == "/openapi.json" { return true }
        return !request.path.hasPrefix("/v1/") && request.path != "/v1" && request.path != "/metrics"
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0xFF)
        }
        return difference == 0
    }
}
