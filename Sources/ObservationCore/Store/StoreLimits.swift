/// The configurable count limits the store enforces (`limitExceeded` past them).
public struct StoreLimits: Sendable {
    public var maxObjects: Int
    public var maxObservers: Int
    public var maxRegistrationsPerObserver: Int
    public var maxStreams: Int
    /// Events the admin stream keeps for resuming.
    public var adminReplay: Int

    public init(
        maxObjects: Int = 1_000_000, maxObservers: Int = 100_000, maxRegistrationsPerObserver: Int = 10_000,
        maxStreams: Int = 10_000, adminReplay: Int = 10_000
    ) {
        self.maxObjects = maxObjects
        self.maxObservers = maxObservers
        self.maxRegistrationsPerObserver = maxRegistrationsPerObserver
        self.maxStreams = maxStreams
        self.adminReplay = adminReplay
    }
}
