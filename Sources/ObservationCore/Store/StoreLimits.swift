/// The configurable limits the store enforces: counts (`limitExceeded` past them) and the
/// byte budgets of the replay buffers (the oldest events leave first, section 7.1).
public struct StoreLimits: Sendable {
    public var maxObjects: Int
    public var maxObservers: Int
    public var maxRegistrationsPerObserver: Int
    public var maxStreams: Int
    /// Queries over all observers (`--max-queries`, section 12).
    public var maxQueries: Int
    /// Stored scoped tokens (`--max-tokens`, section 13).
    public var maxTokens: Int
    /// Events the admin stream keeps for resuming.
    public var adminReplay: Int
    /// Bytes an observer's replay buffer holds at most (`--max-replay-bytes`).
    public var maxReplayBytes: Int
    /// Bytes the admin stream's buffer holds at most (`--max-admin-replay-bytes`).
    public var maxAdminReplayBytes: Int
    /// Postings the `asap` and `idle` queues hold together, and their bytes (name, object, userInfo).
    public var maxQueuedNotifications: Int
    public var maxQueuedNotificationBytes: Int
    /// Idempotency keys kept at once (section 7.3); past it the oldest go before their 10 minutes.
    public var maxIdempotencyKeys: Int
    /// Bytes of kept answers at once; past it the oldest keys go early.
    public var maxIdempotencyBytes: Int
    /// Operations in one transaction (`--max-transaction-ops`, section 15).
    public var maxTransactionOps: Int

    public init(
        maxObjects: Int = 1_000_000, maxObservers: Int = 100_000, maxRegistrationsPerObserver: Int = 10_000,
        maxStreams: Int = 10_000, adminReplay: Int = 10_000, maxReplayBytes: Int = 4 << 20,
        maxAdminReplayBytes: Int = 64 << 20, maxQueuedNotifications: Int = 10_000,
        maxQueuedNotificationBytes: Int = 16 << 20, maxIdempotencyKeys: Int = 100_000,
        maxIdempotencyBytes: Int = 64 << 20, maxQueries: Int = 10_000, maxTokens: Int = 100_000,
        maxTransactionOps: Int = 100
    ) {
        self.maxTransactionOps = maxTransactionOps
        self.maxTokens = maxTokens
        self.maxQueries = maxQueries
        self.maxIdempotencyBytes = maxIdempotencyBytes
        self.maxIdempotencyKeys = maxIdempotencyKeys
        self.maxObjects = maxObjects
        self.maxObservers = maxObservers
        self.maxRegistrationsPerObserver = maxRegistrationsPerObserver
        self.maxStreams = maxStreams
        self.adminReplay = adminReplay
        self.maxReplayBytes = maxReplayBytes
        self.maxAdminReplayBytes = maxAdminReplayBytes
        self.maxQueuedNotifications = maxQueuedNotifications
        self.maxQueuedNotificationBytes = maxQueuedNotificationBytes
    }

    /// No count limits, `limits`' byte budgets (replaying commands that were all accepted once).
    static func unlimited(keeping limits: StoreLimits) -> StoreLimits {
        var unlimited = limits
        unlimited.maxObjects = .max
        unlimited.maxObservers = .max
        unlimited.maxRegistrationsPerObserver = .max
        unlimited.maxStreams = .max
        unlimited.maxQueries = .max
        unlimited.maxTokens = .max
        unlimited.maxTransactionOps = .max
        unlimited.maxQueuedNotifications = .max
        unlimited.maxQueuedNotificationBytes = .max
        return unlimited
    }
}
