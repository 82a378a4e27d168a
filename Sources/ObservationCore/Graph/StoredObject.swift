/// An object as the store keeps it: stored values only (computed ones are derived on read).
struct StoredObject: Sendable {
    let id: String
    let className: String?
    /// The revision of the last change to this object's own values.
    var revision: Int
    let createdAt: Timestamp
    var values: JSONObject
    /// The observer it lives as long as (section 14), fixed at creation.
    var owner: String? = nil
    /// The scoped token (or JWT) that made its owner: what `owned` scopes match.
    var ownerToken: String? = nil
}

/// A read-only view of an object, as `GET /v1/objects/{id}` shows it.
public struct ObjectSnapshot: Sendable, Equatable {
    public let id: String
    public let className: String?
    public let revision: Int
    public let createdAt: Timestamp
    /// Stored values, then computed ones; for a classed object, every property (unset ones as `null`).
    public let values: JSONObject
    /// Observers whose `retainObserved` keeps this object alive.
    public let retainedBy: [String]
    /// The observer it lives as long as (section 14).
    public var owner: String? = nil
}

/// What deleting an object did.
public enum DeleteOutcome: Sendable, Equatable {
    case deleted(revision: Int)
    /// Retained by observers (`retainObserved`); `revision` is nil when it already was pending.
    case releasePending(retainedBy: [String], revision: Int?)
}

/// One page of `GET /v1/objects`.
public struct ObjectPage: Sendable {
    public let objects: [ObjectSnapshot]
    /// The cursor for the next page, when there is one.
    public let next: String?
}

/// A class with its bookkeeping, as `GET /v1/classes/{name}` shows it.
public struct ClassSnapshot: Sendable, Equatable {
    public let schema: ClassSchema
    public let revision: Int
    public let objectCount: Int
}

/// Counts for `GET /v1/stats`.
public struct StoreStats: Sendable {
    public let objects: Int
    public let classes: Int
    public let revision: Int
    public let observers: Int
    public let observations: Int
    public let streams: Int
}

/// What the server's bounded buffers hold now (`/metrics`): each is within its limit.
public struct BufferFigures: Sendable {
    /// Events and bytes in every observer's replay buffer together.
    public let replayEvents: Int
    public let replayBytes: Int
    /// Events and bytes in the admin stream's buffer.
    public let adminReplayEvents: Int
    public let adminReplayBytes: Int
    /// Lease deadlines waiting (one per observer without a stream).
    public let leaseDeadlines: Int
    /// Postings in the `asap` and `idle` queues, and their bytes.
    public let queuedNotifications: Int
    public let queuedNotificationBytes: Int
}

extension ObjectSnapshot {
    /// `{"id", "class", "revision", "createdAt", "values", "retainedBy"}`.
    public var json: JSONObject {
        let members: JSONObject = [
            "id": .string(id),
            "class": className.map(JSON.string) ?? .null,
            "revision": .int(revision),
            "createdAt": .string(createdAt.rfc3339),
            "values": .object(values),
            "retainedBy": .array(retainedBy.map(JSON.string)),
        ]
        return members.adding("owner", owner.map(JSON.string))
    }
}
