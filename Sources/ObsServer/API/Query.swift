import ObservationCore

extension HTTPRequest {
    /// The integer query argument `name`, within `range`; `fallback` when absent (present but
    /// empty is not an integer).
    func intQuery(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = query[name] else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw CoreError(
                .invalidRequest, "query '\(name)' must be an integer in \(range.lowerBound)...\(range.upperBound)",
                details: ["field": .string(name)])
        }
        return value
    }

    /// The query argument `name`, nil when absent or empty.
    func stringQuery(_ name: String) -> String? {
        guard let value = query[name], !value.isEmpty else { return nil }
        return value
    }
}
