/// An observer: one client's controller (FBKVOController). It owns registrations,
/// subscriptions and an event log, and everything it owns goes away with it.
struct ObserverRecord: Sendable {
    let id: String
    let name: String
    /// The SHA-256 of its token (hex): the token itself is never kept.
    let tokenHash: String
    let lease: Int
    let retainObserved: Bool
    /// The client name whose own changes its `skipOwn` registrations skip (section 7.3).
    var client: String? = nil
    /// The scoped token (or JWT) that made it, with what it may do: its registrations read only
    /// that (section 13). Nil when the admin made it (or the server runs open).
    var access: Access? = nil {
        didSet { reader = access?.readFilter }
    }
    /// Patches applied when it is removed (section 14's `onRemove`), in order.
    var onRemove: [RemovalPatch] = []
    /// Where its events are pushed (section 16); nil: it is read by streams and polls.
    var delivery: DeliveryTarget? = nil
    /// The last event its receiver acknowledged (section 16).
    var acknowledged = 0
    /// What its registrations may read: `access`'s filter, made once.
    private(set) var reader: ReadFilter?
    let createdAt: Timestamp
    /// Its events, for its streams (the buffer; the ids are counted here, in `lastEventID`).
    let log: EventLog
    /// The id of its last event.
    var lastEventID: Int
    /// Open event streams.
    var streams = 0
    /// Of those, the ones each cluster node holds (by node and incarnation).
    var holders: [String: Int] = [:]
    /// When the lease runs out; nil while a stream is connected.
    var expiresAt: Timestamp?
}

/// The (object, key path) pair a registration is unique on, per observer.
struct RegistrationTarget: Hashable, Sendable {
    let objectID: String
    let keyPath: String
}

extension Registration {
    var target: RegistrationTarget { RegistrationTarget(objectID: objectID, keyPath: keyPath.description) }
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
    public let queries: Int
    public let lastEventID: Int
    public let backlog: Int
    public let dropped: Int
    public let client: String?
    /// The scoped token (or JWT) that made it (section 13); nil: the admin.
    public var tokenID: String? = nil
    /// Its `onRemove` patches (section 14), as `{"object", "values"}`.
    public var onRemove: [JSON] = []
    /// Where its events are pushed (section 16), and the last event acknowledged there.
    public var delivery: DeliveryTarget? = nil
    public var acknowledged = 0
    /// The registrations, in creation order (only filled for a single observer).
    public let registrations: [RegistrationSnapshot]
    /// The subscriptions, in creation order (only filled for a single observer).
    public let subscriptionList: [SubscriptionSnapshot]
    /// The queries, in creation order (only filled for a single observer).
    public let queryList: [QuerySnapshot]
}

/// Settings for a new observer.
public struct ObserverSettings: Sendable {
    public var name: String?
    public var lease: Int
    public var retainObserved: Bool
    public var replay: Int
    /// Its writers' name (`Obs-Client`): `skipOwn` registrations skip the records it caused.
    public var client: String?
    /// `{"url", "secret", "maxBatch", "timeout"}`: a delivering observer (section 16).
    public var deliver: JSON? = nil

    public init(
        name: String? = nil, lease: Int = 60, retainObserved: Bool = false, replay: Int = 1024, client: String? = nil
    ) {
        self.name = name
        self.lease = lease
        self.retainObserved = retainObserved
        self.replay = replay
        self.client = client
    }

    static let leaseRange = 1...86_400
    static let replayRange = 1...100_000
}

/// One `onRemove` patch (section 14): values set on an object, in the revision that removes the
/// observer, whatever its token's state by then; skipped if the object is gone.
struct RemovalPatch: Sendable, Equatable {
    let object: String
    let values: JSONObject

    static let max = 16

    var json: JSON { ["object": .string(object), "values": .object(values)] }
}
