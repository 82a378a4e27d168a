import ObservationCore

/// A request's JSON object body, with typed access to its members.
///
/// Refuses (in this order) a body that is not JSON by its Content-Type (415),
/// text that does not parse (400 `invalidJSON`), a string over the limit (413
/// `payloadTooLarge`), a value that is not an
/// object, and members not in `allowed` (400 `invalidRequest`, with a
/// did-you-mean). An empty body reads as `{}` (one of only white space is not JSON).
struct JSONBody {
    let members: JSONObject

    init(_ request: HTTPRequest, allowed: [String], maxStringBytes: Int) throws {
        if let contentType = request.headers.contentType, !Self.isJSON(contentType) {
            throw APIError.unsupportedMediaType(contentType)
        }
        if request.body.isEmpty {
            members = [:]
            return
        }
        guard case .object(let members) = try JSONParser.parse(request.body, maxStringBytes: maxStringBytes) else {
            throw CoreError(.invalidRequest, "the body must be a JSON object")
        }
        for (key, _) in members where !allowed.contains(key) {
            throw CoreError.unknownField(key, in: "request body", allowed: allowed)
        }
        self.members = members
    }

    /// A JSON object inside a body (a transaction's operation), with the same checks of its
    /// members; `context` names it in the error.
    init(members: JSONObject, allowed: [String], context: @autoclosure () -> String) throws {
        for (key, _) in members where !allowed.contains(key) {
            throw CoreError.unknownField(key, in: context(), allowed: allowed)
        }
        self.members = members
    }

    /// Whether a Content-Type names JSON: `application/json` or any `+json` type, parameters ignored.
    /// On every request with a body, so it compares bytes in place.
    static func isJSON(_ contentType: String) -> Bool {
        if contentType == "application/json" { return true }  // nearly every write: one comparison
        var contentType = contentType  // `withUTF8` is mutating; a native string is not copied
        return contentType.withUTF8 { bytes in
            var start = 0
            var end = 0
            while end < bytes.count, bytes[end] != UInt8(ascii: ";") { end += 1 }
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            func part(_ range: Range<Int>) -> UnsafeRawBufferPointer {
                UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[range]))
            }
            return ASCII.equalsLowercased(part(start..<end), "application/json")
                || (end - start > 5 && ASCII.equalsLowercased(part(end - 5..<end), "+json"))
        }
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// The member `key` as it is, or nil when absent.
    subscript(key: String) -> JSON? { members[key] }

    func string(_ key: String) throws -> String? {
        switch members[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case let other?: throw mismatch(key, "a string", other)
        }
    }

    func int(_ key: String) throws -> Int? {
        switch members[key] {
        case nil, .null?: return nil
        case .int(let value)?: return value
        case .double(let value)? where value.rounded() == value && abs(value) < 9.0e15: return Int(value)
        case let other?: throw mismatch(key, "an integer", other)
        }
    }

    func bool(_ key: String) throws -> Bool? {
        switch members[key] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        case let other?: throw mismatch(key, "a boolean", other)
        }
    }

    func object(_ key: String) throws -> JSONObject? {
        switch members[key] {
        case nil, .null?: return nil
        case .object(let value)?: return value
        case let other?: throw mismatch(key, "an object", other)
        }
    }

    func array(_ key: String) throws -> [JSON]? {
        switch members[key] {
        case nil, .null?: return nil
        case .array(let value)?: return value
        case let other?: throw mismatch(key, "an array", other)
        }
    }

    /// An array of strings (`"keyPaths must be strings, not a number"` otherwise).
    func strings(_ key: String) throws -> [String]? {
        guard let elements = try array(key) else { return nil }
        var strings: [String] = []
        for element in elements {
            guard case .string(let text) = element else {
                throw CoreError(.typeMismatch, "\(key) must be strings, not \(element.typeNameWithArticle)")
            }
            strings.append(text)
        }
        return strings
    }

    /// `key` must be present (any JSON, `null` included).
    func required(_ key: String) throws -> JSON {
        guard let value = members[key] else { throw CoreError(.invalidRequest, "'\(key)' is required") }
        return value
    }

    /// `read` is a closure (`{ try body.string($0) }`): a method passed as it is (`body.string`)
    /// would be a closure allocated on every call.
    func required<T>(_ key: String, _ read: (String) throws -> T?) throws -> T {
        guard let value = try read(key) else { throw CoreError(.invalidRequest, "'\(key)' is required") }
        return value
    }

    private func mismatch(_ key: String, _ expected: String, _ value: JSON) -> CoreError {
        CoreError(
            .typeMismatch, "'\(key)' must be \(expected), not \(value.typeNameWithArticle)",
            details: ["field": .string(key), "got": .string(value.typeName)])
    }
}
