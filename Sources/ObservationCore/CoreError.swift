/// Why the core refused an operation. Every refusal leaves the state unchanged.
///
/// `Code` is the stable machine-readable reason; the server maps each code to
/// an HTTP status in exactly one place. `message` is for people, `details`
/// for programs (a suggestion, an offset, the expected type).
public struct CoreError: Error, Sendable, Equatable {
    public enum Code: String, Sendable, CaseIterable {
        case invalidJSON
        case invalidRequest
        case invalidName
        case invalidKeyPath
        case unknownKeyPath
        case typeMismatch
        case notACollection
        case indexOutOfRange
        case readOnly
        case notFound
        case conflict
        /// An `Idempotency-Key` reused for a different request (section 7.3).
        case idempotencyKeyReused
        case revisionMismatch
        /// A transaction's `expect` condition that did not hold (section 15).
        case conditionFailed
        /// A token that is missing or no longer works (section 13: `details.reason`).
        case unauthorized
        /// A valid token without rights to what was asked (section 13).
        case forbidden
        case limitExceeded
        /// A request part over a size limit (a JSON string longer than the server allows).
        case payloadTooLarge
        /// The server cannot make a write durable now (its data directory refuses writes);
        /// `details.retryAfter` says in how many seconds to try again.
        case unavailable
        /// A cluster write whose outcome the node could not learn in time (section 11): it may
        /// or may not have been applied; repeating it with the same `Idempotency-Key` is safe.
        case outcomeUnknown
    }

    public let code: Code
    public let message: String
    public let details: JSONObject

    public init(_ code: Code, _ message: String, details: JSONObject = [:]) {
        self.code = code
        self.message = message
        self.details = details
    }
}

extension CoreError {
    static func notFound(_ kind: String, _ id: String) -> CoreError {
        CoreError(.notFound, "no \(kind) '\(id)'", details: [kind: .string(id)])
    }

    static func unknownKey(_ key: String, in owner: String, candidates: some Sequence<String>) -> CoreError {
        var message = "\(owner) has no key '\(key)'"
        var details: JSONObject = ["key": .string(key)]
        if let suggestion = Suggestion.closest(to: key, in: candidates) {
            message += "; did you mean '\(suggestion)'?"
            details["suggestion"] = .string(suggestion)
        }
        return CoreError(.unknownKeyPath, message, details: details)
    }
}
