import ObservationCore

extension HTTPRequest {
    /// The integer query argument `name`, within `range`; `fallback` when absent or empty
    /// (the contract writes `?class=&limit=&after=`: an empty argument is one not given).
    func intQuery(_ name: String, default fallback: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text = query[name], !text.isEmpty else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw CoreError(
                .invalidRequest, "query '\(name)' must be an integer in \(range.lowerBound)...\(range.upperBound)",
                details: ["field": .string(name)])
        }
        return value
    }

    /// The query argument `name` that must be an id (object, class, cursor): nil when absent or
    /// empty, 400 `invalidName` when it is not an id.
    func idQuery(_ name: String) throws -> String? {
        guard let value = stringQuery(name) else { return nil }
        try Names.checkID(value, "'\(name)'")
        return value
    }

    /// The on/off query argument `name` (`1`/`true` or `0`/`false`); false when absent or empty.
    func flagQuery(_ name: String) throws -> Bool {
        switch stringQuery(name) {
        case nil, "0", "false": return false
        case "1", "true": return true
        default:
            throw CoreError(
                .invalidRequest, "query '\(name)' must be 1 or 0 (true or false)", details: ["field": .string(name)])
        }
    }

    /// The query argument `name`, nil when absent or empty.
    func stringQuery(_ name: String) -> String? {
        guard let value = query[name], !value.isEmpty else { return nil }
        return value
    }
}
