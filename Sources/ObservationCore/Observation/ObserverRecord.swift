/// An observer: one client's controller (FBKVOController). It owns registrations and
/// an event log, and everything it owns goes away with it.
struct ObserverRecord: Sendable {
    let id: String
    let name: String
    let token: String
    let lease: Int
    let retainObserved: Bool
    let createdAt: Timestamp
    let log: EventLog
    /// Registration ids by (object, key path): the deduplication table.
    var registrationsByTarget: [RegistrationTarget: String] = [:]
    /// Subscription ids by (name, object): the deduplication table of the notification center.
    var subscriptionsByTarget: [SubscriptionTarget: String] = [:]
    /// Open event streams.
    var streams = 0
    /// When the lease runs out; nil while a stream is connected.
    var expiresAt: ContinuousClock.Instant?
}

/// The (object, key path) pair a registration is unique on, per observer.
struct RegistrationTarget: Hashable, Sendable {
    let objectID: String
    let keyPath: String
}

/// An observer as clients see it (`GET /v1/observers`).
public struct ObserverSnapshot: Sendable {
    public let id: String
    public let name: String
    public let lease: Int
    public let retainObserved: Bool
    public let replay: Int
    public let createdAt: Timestamp
    public let streams: Int
    /// Wall-clock time the lease runs out; nil while a stream is connected.
    public let expiresAt: Timestamp?
    public let observations: Int
    public let subscriptions: Int
    public let lastEventID: Int
    public let backlog: Int
    public let dropped: Int
    /// The registrations, in creation order (only filled for a single observer).
    public let registrations: [RegistrationSnapshot]
    /// The subscriptions, in creation order (only filled for a single observer).
    public let subscriptionList: [SubscriptionSnapshot]
}

/// What creating an observer returns: its snapshot and its token, shown once.
public struct CreatedObserver: Sendable {
    public let observer: ObserverSnapshot
    public let token: String
}

/// Settings for a new observer.
public struct ObserverSettings: Sendable {
    public var name: String?
    public var lease: Int
    public var retainObserved: Bool
    public var replay: Int

    public init(name: String? = nil, lease: Int = 60, retainObserved: Bool = false, replay: Int = 1024) {
        self.name = name
        self.lease = lease
        self.retainObserved = retainObserved
        self.replay = replay
    }

    static let leaseRange = 1...86_400
    static let replayRange = 1...100_000
}
