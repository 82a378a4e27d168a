/// Apple KVO's registration options (section 5.2).
public struct ObservationOptions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Change records carry `new`.
    public static let new = ObservationOptions(rawValue: 1 << 0)
    /// Change records carry `old`.
    public static let old = ObservationOptions(rawValue: 1 << 1)
    /// One record with the current value right after registration.
    public static let initial = ObservationOptions(rawValue: 1 << 2)
    /// One record before each change, then the usual one after it.
    public static let prior = ObservationOptions(rawValue: 1 << 3)
    /// No records for changes its observer's own client made (section 7.3).
    public static let skipOwn = ObservationOptions(rawValue: 1 << 4)

    /// The option names in the contract's order.
    public static let names: [(String, ObservationOptions)] = [
        ("new", .new), ("old", .old), ("initial", .initial), ("prior", .prior), ("skipOwn", .skipOwn),
    ]

    /// Parses option names; throws `invalidRequest` with a suggestion for an unknown one.
    public init(names: [String]) throws(CoreError) {
        var options: ObservationOptions = []
        for name in names {
            guard let option = Self.names.first(where: { $0.0 == name })?.1 else {
                throw CoreError.unknownField(name, in: "options", allowed: Self.names.map(\.0))
            }
            options.insert(option)
        }
        self = options
    }

    public var nameList: [String] { Self.names.filter { contains($0.1) }.map(\.0) }
}
