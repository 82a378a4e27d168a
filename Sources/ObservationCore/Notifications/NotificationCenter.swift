/// The notification center: subscriptions, their GNUstep tables and per-observer dedup
/// table, and the posting queue (NSNotificationQueue).
///
/// Owns its fields; every list it hands out is in creation order (`sequence`).
struct NotificationCenter: Sendable {
    private var subscriptions: [String: Subscription] = [:]
    private var index = SubscriptionIndex()
    /// Subscription ids by observer, then by (name, object): the deduplication table.
    private var byObserver: [String: [SubscriptionTarget: String]] = [:]
    /// The last creation sequence handed out.
    private(set) var sequence = 0
    var queue: NotificationQueue

    init(queue: NotificationQueue) { self.queue = queue }

    var count: Int { subscriptions.count }

    /// Every subscription id, sorted.
    var ids: [String] { subscriptions.keys.sorted() }

    subscript(id: String) -> Subscription? { subscriptions[id] }

    /// The subscription to (name, object) an observer holds, if any.
    func subscription(of observerID: String, at target: SubscriptionTarget) -> Subscription? {
        byObserver[observerID]?[target].flatMap { subscriptions[$0] }
    }

    func count(of observerID: String) -> Int { byObserver[observerID]?.count ?? 0 }

    /// An observer's subscriptions, in creation order.
    func owned(by observerID: String) -> [Subscription] {
        (byObserver[observerID]?.values.compactMap { subscriptions[$0] } ?? []).sorted { $0.sequence < $1.sequence }
    }

    /// The subscriptions a posting of `name` from `object` reaches, in creation order.
    func matching(name: String, object: String?) -> [Subscription] {
        index.matching(name: name, object: object).compactMap { subscriptions[$0] }.sorted { $0.sequence < $1.sequence }
    }

    mutating func nextSequence() -> Int {
        sequence += 1
        return sequence
    }

    mutating func continueSequence(after value: Int) { sequence = max(sequence, value) }

    mutating func insert(_ subscription: Subscription) {
        subscriptions[subscription.id] = subscription
        index.insert(subscription.id, subscription.target)
        byObserver[subscription.observerID, default: [:]][subscription.target] = subscription.id
    }

    @discardableResult
    mutating func remove(_ id: String) -> Subscription? {
        guard let subscription = subscriptions.removeValue(forKey: id) else { return nil }
        index.remove(id, subscription.target)
        byObserver[subscription.observerID]?[subscription.target] = nil
        if byObserver[subscription.observerID]?.isEmpty == true { byObserver[subscription.observerID] = nil }
        return subscription
    }
}
