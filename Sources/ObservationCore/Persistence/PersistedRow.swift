/// One entity as it is stored: its kind, its id, and its JSON document (nil: the entity is gone).
public struct PersistedRow: Sendable {
    public let kind: EntityKind
    public let id: String
    public let document: [UInt8]?

    public init(kind: EntityKind, id: String, document: [UInt8]?) {
        self.kind = kind
        self.id = id
        self.document = document
    }
}

/// What a store is rebuilt from at start: every stored row, and the counters.
public struct PersistedImage: Sendable {
    public var rows: [PersistedRow]
    /// The global revision at the last commit.
    public var revision: Int
    /// The admin stream's last event id at the last commit (its ids continue).
    public var adminLastEventID: Int

    public init(rows: [PersistedRow] = [], revision: Int = 0, adminLastEventID: Int = 0) {
        self.rows = rows
        self.revision = revision
        self.adminLastEventID = adminLastEventID
    }
}

/// A stored row the store cannot rebuild from (a damaged or foreign data directory).
public struct PersistenceError: Error, Sendable, CustomStringConvertible {
    public let kind: EntityKind
    public let id: String
    public let reason: String

    public var description: String { "stored \(kind.rawValue) '\(id)' is unreadable: \(reason)" }
}

/// One group commit's worth of changes, taken from the store under its lock. Entities are
/// copied (cheap: copy-on-write values) and encoded by `rows()` after the lock is released.
public struct JournalBatch: Sendable {
    enum Entity: Sendable {
        case `class`(StoreState.ClassRecord)
        case object(StoredObject, pendingRelease: Bool)
        case observer(ObserverRecord)
        case registration(Registration)
        case subscription(Subscription)
        case lastEventID(Int)
    }

    /// Every change up to this journal sequence is in the batch.
    public let sequence: Int
    public let revision: Int
    let entities: [(kind: EntityKind, id: String, entity: Entity?)]
    let adminLog: EventLog
    /// Logs with held-back events, and how far each may show once the batch is durable.
    let logs: [(log: EventLog, lastID: Int)]

    public var isEmpty: Bool { entities.isEmpty }

    /// This batch followed by `later` as one: each entity once, as `later` has it when both
    /// changed it (a failed commit is retried together with what came after it, in memory
    /// that grows with the entities changed, not with the number of retries or changes).
    public func merged(with later: JournalBatch) -> JournalBatch {
        var order: [EntityKey] = []
        var latest: [EntityKey: (kind: EntityKind, id: String, entity: Entity?)] = [:]
        for change in entities + later.entities {
            let key = EntityKey(kind: change.kind, id: change.id)
            if latest.updateValue(change, forKey: key) == nil { order.append(key) }
        }
        var logs: [ObjectIdentifier: (log: EventLog, lastID: Int)] = [:]
        var logOrder: [ObjectIdentifier] = []
        for (log, lastID) in self.logs + later.logs {
            let key = ObjectIdentifier(log)
            if let known = logs[key] {
                logs[key] = (log, max(known.lastID, lastID))
            } else {
                logs[key] = (log, lastID)
                logOrder.append(key)
            }
        }
        return JournalBatch(
            sequence: max(sequence, later.sequence), revision: max(revision, later.revision),
            entities: order.compactMap { latest[$0] }, adminLog: adminLog, logs: logOrder.compactMap { logs[$0] })
    }

    /// Shows the batch's events to streams (call once it is durable).
    public func publish() {
        for (log, lastID) in logs { log.publish(through: lastID) }
        for (log, _) in logs { log.wake() }
    }

    /// The admin stream's last event id, read now (ids only grow: a later one is safe to store).
    public var adminLastEventID: Int { adminLog.lastID }

    private struct EntityKey: Hashable {
        let kind: EntityKind
        let id: String
    }

    /// The rows to write: one per changed entity, `document` nil for a deleted one.
    public func rows() -> [PersistedRow] {
        entities.map { change in
            PersistedRow(kind: change.kind, id: change.id, document: change.entity.map { $0.document.encoded() })
        }
    }
}
