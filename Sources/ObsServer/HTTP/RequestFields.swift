/// What the daemon reads of a request's headers and query, gathered in one pass.
struct RequestFields {
    var headers = HTTPHeaders()
    var contentLength: String?
    var query: [String: String] = [:]

    /// Keeps `value` if `name` (any case) is a header the service reads and it is its first
    /// (made a `String` only then: most headers are not read).
    mutating func setHeader(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        func first(_ field: inout String?) { if field == nil { field = Self.text(value) } }
        switch name.count {
        case 6 where ASCII.equalsLowercased(name, "accept"): first(&headers.accept)
        case 6 where ASCII.equalsLowercased(name, "origin"): first(&headers.origin)
        case 10 where ASCII.equalsLowercased(name, "obs-client"): first(&headers.client)
        case 12 where ASCII.equalsLowercased(name, "content-type"): first(&headers.contentType)
        case 12 where ASCII.equalsLowercased(name, "x-request-id"): first(&headers.requestID)
        case 13 where ASCII.equalsLowercased(name, "authorization"): first(&headers.authorization)
        case 13 where ASCII.equalsLowercased(name, "last-event-id"): first(&headers.lastEventID)
        case 14 where ASCII.equalsLowercased(name, "content-length"): first(&contentLength)
        case 15 where ASCII.equalsLowercased(name, "idempotency-key"): first(&headers.idempotencyKey)
        case 29 where ASCII.equalsLowercased(name, "access-control-request-method"): first(&headers.corsRequestMethod)
        default: break
        }
    }

    /// A value as a string; the one Content-Type nearly every write carries is a constant
    /// (a string that long would otherwise take an allocation per request).
    static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        let json: StaticString = "application/json"
        if bytes.count == json.utf8CodeUnitCount, json.withUTF8Buffer({ $0.elementsEqual(bytes) }) {
            return "application/json"
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
