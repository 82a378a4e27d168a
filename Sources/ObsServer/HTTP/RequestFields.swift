import Glibc

/// What the daemon reads of a request's headers and query, gathered in one pass.
struct RequestFields {
    var headers = HTTPHeaders()
    /// `Content-Length` as `Int` reads it (nil when it does not).
    var contentLength: Int?
    var query: [String: String] = [:]
    private var sawContentLength = false

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
        case 14 where ASCII.equalsLowercased(name, "content-length"):
            if !sawContentLength { (sawContentLength, contentLength) = (true, Self.integer(value)) }
        case 15 where ASCII.equalsLowercased(name, "idempotency-key"): first(&headers.idempotencyKey)
        case 29 where ASCII.equalsLowercased(name, "access-control-request-method"): first(&headers.corsRequestMethod)
        default: break
        }
    }

    /// Decimal digits after an optional sign, as `Int(_: String)` reads them, without the string.
    static func integer(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard let first = bytes.first else { return nil }
        let negative = first == UInt8(ascii: "-")
        let start = negative || first == UInt8(ascii: "+") ? 1 : 0
        guard start < bytes.count else { return nil }
        var value = 0
        for byte in bytes[start...] {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(negative ? -Int(digit) : Int(digit))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        return value
    }

    /// A value as a string; the one Content-Type nearly every write carries is a constant
    /// (a string that long would otherwise take an allocation per request).
    static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        let json: StaticString = "application/json"
        if bytes.count == json.utf8CodeUnitCount, let base = bytes.baseAddress,
            memcmp(base, json.utf8Start, bytes.count) == 0
        {
            return "application/json"
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
