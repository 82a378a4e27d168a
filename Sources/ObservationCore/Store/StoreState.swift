/// Everything the store holds. Not thread-safe by itself: `Store` keeps it
/// behind its one lock (`Locked`), and every method here runs under that lock.
///
/// Methods either succeed completely or throw before changing anything.
struct StoreState: Sendable {
    struct ClassRecord: Sendable {
        var schema: ClassSchema
        var revision: Int
    }

    /// The global revision: the last one a successful change took.
    var revision = 0
    var classes: [String: ClassRecord] = [:]
    var objects: [String: StoredObject] = [:]
    /// All object ids, sorted (paging).
    var objectIDs = SortedIDs()
    /// Object ids per class name, sorted (paging by class, class deletion and replacement).
    var objectIDsByClass: [String: SortedIDs] = [:]
    var limits: StoreLimits

    // MARK: Observation
    var observers: [String: ObserverRecord] = [:]
    /// Observer ids by token (section 9: an observer's token grants its own resources).
    var observersByToken: [String: String] = [:]
    var registrations: [String: Registration] = [:]
    /// Registration ids by object, then by the top-level key they read ("" for the
    /// object's existence): a write finds what it affects here, never by a scan.
    var dependents: [String: [String: Set<String>]] = [:]
    /// Registration ids by the object they observe (deletion, retain/release).
    var registrationsByObject: [String: Set<String>] = [:]
    var registrationSequence = 0
    /// Objects deleted while an observer retains them (`retainObserved`).
    var pendingRelease: Set<String> = []
    /// When each observer without a stream expires (one entry per such observer).
    var leaseDeadlines = DeadlineHeap<ContinuousClock.Instant>()
    // MARK: Notification center
    var subscriptions: [String: Subscription] = [:]
    var subscriptionIndex = SubscriptionIndex()
    var notificationQueue: NotificationQueue
    /// Open event streams, the admin stream included.
    var streams = 0
    let adminLog: EventLog
    /// Logs that got events during the current operation, woken after the lock is released.
    var touchedLogs: [ObjectIdentifier: EventLog] = [:]
    /// What changed since the last commit (persistence).
    var journal: Journal
    /// Why writes are refused now (the data directory cannot take them), and when to retry.
    var outage: Outage?

    init(limits: StoreLimits, persistent: Bool = false) {
        self.limits = limits
        self.journal = Journal(enabled: persistent)
        self.notificationQueue = NotificationQueue(
            maxEntries: limits.maxQueuedNotifications, maxBytes: limits.maxQueuedNotificationBytes)
        self.adminLog = EventLog(
            capacity: limits.adminReplay, maxBytes: limits.maxAdminReplayBytes, gated: persistent)
    }

    /// Takes the next revision.
    mutating func nextRevision() -> Int {
        revision += 1
        return revision
    }

    var checker: KeyPathChecker {
        KeyPathChecker { [classes] name in classes[name]?.schema }
    }

    func schema(of object: StoredObject) -> ClassSchema? {
        object.className.flatMap { classes[$0]?.schema }
    }

    func existingObject(_ id: String) throws(CoreError) -> StoredObject {
        guard let object = objects[id] else { throw CoreError.notFound("object", id) }
        return object
    }

    func checkRevision(_ object: StoredObject, _ expected: Int?) throws(CoreError) {
        if let expected, expected != object.revision {
            throw CoreError(
                .revisionMismatch, "object '\(object.id)' is at revision \(object.revision), not \(expected)",
                details: ["revision": .int(object.revision), "expected": .int(expected)])
        }
    }
}
