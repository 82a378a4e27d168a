/// One NSNotificationCenter registration of an observer: a name, an object, both, or neither.
struct Subscription: Sendable {
    let id: String
    let observerID: String
    let target: SubscriptionTarget
    let createdAt: Timestamp
    let sequence: Int
}

/// The (name, object) pair a subscription is unique on, per observer; nil means "any".
struct SubscriptionTarget: Hashable, Sendable {
    let name: String?
    let object: String?

    /// removeObserver:name:object: — an absent filter matches any value, a given one only entries that name it.
    func matches(name filterName: String?, object filterObject: String?) -> Bool {
        (filterName == nil || filterName == name) && (filterObject == nil || filterObject == object)
    }
}

/// A subscription as clients see it.
public struct SubscriptionSnapshot: Sendable, Equatable {
    public let id: String
    public let name: String?
    public let object: String?
    public let createdAt: Timestamp

    /// `{"id", "name", "object", "createdAt"}`.
    public var json: JSONObject {
        [
            "id": .string(id), "name": name.map(JSON.string) ?? .null, "object": object.map(JSON.string) ?? .null,
            "createdAt": .string(createdAt.rfc3339),
        ]
    }
}

extension Subscription {
    var snapshot: SubscriptionSnapshot {
        SubscriptionSnapshot(id: id, name: target.name, object: target.object, createdAt: createdAt)
    }
}
