/// Where a delivering observer's events go (section 16): checked when the observer is made,
/// kept in its record, its checkpoint document and its `createObserver` command.
///
/// The secret is kept as given (`whsec_…`): every request is signed with it, so the state
/// holds it, as the data directory and the cluster's log do; no answer but the 201 shows it.
public struct DeliveryTarget: Sendable, Equatable {
    public let url: String
    public let secret: String
    public let maxBatch: Int
    /// Seconds an attempt may take.
    public let timeout: Int

    static let maxBatchRange = 1...1000
    static let timeoutRange = 1...60
    public static let defaultMaxBatch = 100
    public static let defaultTimeout = 10

    public init(url: String, secret: String, maxBatch: Int, timeout: Int) {
        self.url = url
        self.secret = secret
        self.maxBatch = maxBatch
        self.timeout = timeout
    }

    /// `{"url", "secret", "maxBatch", "timeout"}` as the command carries it; the URL and the
    /// secret's form were checked by the server that issued it (they depend on its flags).
    init(json: JSON) throws(CoreError) {
        guard case .object(let members) = json, case .string(let url)? = members["url"],
            case .string(let secret)? = members["secret"]
        else { throw CoreError(.invalidRequest, "deliver needs a url and a secret", details: ["field": "deliver"]) }
        let maxBatch = try Self.int(members, "maxBatch", Self.maxBatchRange, default: Self.defaultMaxBatch)
        let timeout = try Self.int(members, "timeout", Self.timeoutRange, default: Self.defaultTimeout)
        self.init(url: url, secret: secret, maxBatch: maxBatch, timeout: timeout)
    }

    public var json: JSON {
        ["url": .string(url), "secret": .string(secret), "maxBatch": .int(maxBatch), "timeout": .int(timeout)]
    }

    private static func int(_ members: JSONObject, _ name: String, _ range: ClosedRange<Int>, default value: Int)
        throws(CoreError) -> Int
    {
        guard let given = members[name], given != .null else { return value }
        guard case .int(let number) = given, range.contains(number) else {
            throw CoreError(
                .invalidRequest, "deliver.\(name) must be an integer in \(range.lowerBound)–\(range.upperBound)",
                details: ["field": .string("deliver.\(name)")])
        }
        return number
    }
}

/// A delivering observer as the deliverer sees it: where to, from which log, and how far the
/// receiver has acknowledged (`Store.deliveringObservers`).
public struct DeliveringObserver: Sendable {
    public let id: String
    public let target: DeliveryTarget
    public let acknowledged: Int
    public let log: EventLog
}
