import ObservationCore

/// Section 9: who may do what once the server has a token (`--token`).
///
/// - The service token (`Authorization: Bearer T`) may do everything.
/// - An observer's token may use that observer (`/v1/observers/{id}` and below) and read
///   (`GET`) objects and classes; anything else with it is 403.
/// - An event stream, and only an event stream, may pass the token as `?access_token=`
///   (browsers' EventSource cannot set headers).
/// - Open without a token: `GET /healthz`, `GET /openapi.json` and the static dashboard files.
///
/// The service token is compared in constant time (wherever the first difference is).
/// Without `--token`, nothing is checked.
struct Authenticator: Sendable {
    private let serviceToken: [UInt8]?
    private let store: Store

    init(token: String?, store: Store) {
        serviceToken = token.map { Array($0.utf8) }
        self.store = store
    }

    /// Why `request` is refused, or nil when it may proceed.
    func refusal(for request: HTTPRequest) -> APIError? {
        guard let serviceToken, !isOpen(request) else { return nil }
        guard let given = presentedToken(request) else { return .unauthorized }
        if Self.constantTimeEqual(Array(given.utf8), serviceToken) { return nil }
        guard let observerID = store.observerID(forToken: given) else { return .unauthorized }
        return mayUse(request, observerID) ? nil : .forbidden
    }

    private func presentedToken(_ request: HTTPRequest) -> String? {
        if let header = request.headers.authorization {
            return header.hasPrefix("Bearer ") ? String(header.dropFirst(7)) : nil
        }
        guard isEventStream(request) else { return nil }
        return request.stringQuery("access_token")
    }

    /// Decided on the decoded segments, as the router sees them.
    private func mayUse(_ request: HTTPRequest, _ observerID: String) -> Bool {
        let segments = request.segments
        guard segments.count >= 2, segments[0] == "v1" else { return false }
        if segments.count >= 3, segments[1] == "observers", segments[2] == observerID { return true }
        if request.isQueryRead { return true }  // a read, like GET (section 12)
        guard request.method == .get || request.method == .head else { return false }
        return segments[1] == "objects" || segments[1] == "classes"
    }

    private func isEventStream(_ request: HTTPRequest) -> Bool {
        let segments = request.segments
        return request.method == .get
            && (segments == ["v1", "events"]
                || (segments.count == 4 && segments[0] == "v1" && segments[1] == "observers"
                    && segments[3] == "events"))
    }

    private func isOpen(_ request: HTTPRequest) -> Bool {
        guard request.method == .get || request.method == .head else { return false }
        let segments = request.segments
        if segments == ["healthz"] || segments == ["openapi.json"] { return true }
        return segments.first != "v1" && segments != ["metrics"]
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0xFF)
        }
        return difference == 0
    }
}
