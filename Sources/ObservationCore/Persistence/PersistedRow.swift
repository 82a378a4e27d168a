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

/// What a store is rebuilt from at start: the last checkpoint (every stored row, and the
/// counters), then the commands made durable after it, to apply again in order.
public struct PersistedImage: Sendable {
    public var rows: [PersistedRow]
    /// The global revision at the checkpoint.
    public var revision: Int
    /// The admin stream's last event id at the checkpoint (its ids continue).
    public var adminLastEventID: Int
    /// The state's clock at the checkpoint (milliseconds).
    public var clock: Int64
    /// The position of the last command the rows include.
    public var checkpoint: Int
    /// The commands after the checkpoint, in order: their positions and encodings.
    public var commands: [(position: Int, bytes: [UInt8])]
    /// A cluster checkpoint: every entity, with the streams nodes hold, the exact lease
    /// deadlines and `counters` (creation sequences, admin streams), so that the replica
    /// continues exactly like the others. (One server's checkpoints are not: a start resets
    /// streams and leases.)
    public var exact = false
    public var counters: JSONObject = [:]

    public init(
        rows: [PersistedRow] = [], revision: Int = 0, adminLastEventID: Int = 0, clock: Int64 = 0, checkpoint: Int = 0,
        commands: [(position: Int, bytes: [UInt8])] = []
    ) {
        self.rows = rows
        self.revision = revision
        self.adminLastEventID = adminLastEventID
        self.clock = clock
        self.checkpoint = checkpoint
        self.commands = commands
    }

    /// The position of the last command stored.
    public var lastPosition: Int { commands.last?.position ?? checkpoint }
}

/// A stored row the store cannot rebuild from (a damaged or foreign data directory).
public struct PersistenceError: Error, Sendable, CustomStringConvertible {
    public let kind: EntityKind
    public let id: String
    public let reason: String

    public var description: String { "stored \(kind.rawValue) '\(id)' is unreadable: \(reason)" }
}

/// One group commit, taken from the store under its lock: the commands applied since the last
/// one, in order, and, for a checkpoint, the state they leave (the entities changed since the
/// last checkpoint, copied: cheap copy-on-write values, encoded after the lock is released).
public struct JournalBatch: Sendable {
    enum Entity: Sendable {
        case `class`(ObjectGraph.ClassRecord)
        case object(StoredObject, pendingRelease: Bool)
        case observer(ObserverRecord)
        case registration(Registration)
        case subscription(Subscription)
        /// With a delivering observer's unacknowledged events (section 16).
        case lastEventID(Int, pending: [Event] = [])
        case queue(NotificationQueue)
        case idempotency(IdempotencyTable.Entry)
        case query(QueryRegistration, definition: JSONObject)
        case token(StoredToken)
        case endedToken(EndedToken, forgetAt: Int64)
    }

    /// A checkpoint: every entity changed since the last one, and the counters, as of `position`.
    public struct Checkpoint: Sendable {
        let entities: [(kind: EntityKind, id: String, entity: Entity?)]
        public let position: Int
        public let revision: Int
        public let adminLastEventID: Int
        public let clock: Int64
        /// What an exact (cluster) checkpoint adds: creation sequences, admin streams held.
        public var counters: JSONObject = [:]

        /// The rows to write: one per changed entity, `document` nil for a deleted one.
        public func rows() -> [PersistedRow] {
            entities.map { change in
                PersistedRow(kind: change.kind, id: change.id, document: change.entity.map { $0.document.encoded() })
            }
        }
    }

    /// The commands to append to the log (after the checkpoint, when there is one): their
    /// positions and encodings (`Command.encoded()`).
    public let commands: [(position: Int, bytes: [UInt8])]
    public let checkpoint: Checkpoint?
    /// Every command up to this position is in the batch (or in its checkpoint).
    public let sequence: Int
    /// Logs with held-back events, and how far each may show once the batch is durable.
    let logs: [(log: EventLog, through: Int)]
    /// Every command up to this revision is in the batch (or in an earlier one).
    var revision = 0

    public var isEmpty: Bool { commands.isEmpty && checkpoint == nil }

    /// This batch followed by `later` as one (a failed commit is retried together with what
    /// came after it): a later checkpoint covers every command before it; two checkpoints
    /// keep each entity once, as the later one has it. Its memory grows with the commands and
    /// entities, not with the number of retries.
    public func merged(with later: JournalBatch) -> JournalBatch {
        var checkpoint = self.checkpoint
        var commands = self.commands + later.commands
        if let next = later.checkpoint {
            var order: [EntityKey] = []
            var latest: [EntityKey: (kind: EntityKind, id: String, entity: Entity?)] = [:]
            for change in (self.checkpoint?.entities ?? []) + next.entities {
                let key = EntityKey(kind: change.kind, id: change.id)
                if latest.updateValue(change, forKey: key) == nil { order.append(key) }
            }
            checkpoint = Checkpoint(
                entities: order.compactMap { latest[$0] }, position: next.position, revision: next.revision,
                adminLastEventID: next.adminLastEventID, clock: next.clock)
            commands = later.commands
        }
        var logs: [ObjectIdentifier: (log: EventLog, through: Int)] = [:]
        var logOrder: [ObjectIdentifier] = []
        for (log, through) in self.logs + later.logs {
            let key = ObjectIdentifier(log)
            if let known = logs[key] {
                logs[key] = (log, max(known.through, through))
            } else {
                logs[key] = (log, through)
                logOrder.append(key)
            }
        }
        return JournalBatch(
            commands: commands, checkpoint: checkpoint, sequence: max(sequence, later.sequence),
            logs: logOrder.compactMap { logs[$0] }, revision: max(revision, later.revision))
    }

    /// Shows the batch's events to streams (call once it is durable).
    public func publish() {
        for (log, through) in logs { log.publish(through: through) }
        for (log, _) in logs { log.wake() }
    }

    private struct EntityKey: Hashable {
        let kind: EntityKind
        let id: String
    }
}
