/// The kinds of persisted entities: each is one table of rows keyed by id.
public enum EntityKind: String, Sendable, CaseIterable {
    case `class`, object, observer, registration, subscription
    /// An observer's last event id, kept apart from its document: it changes with every
    /// event, and a checkpoint after a write seen by 1,000 observers should write 1,000
    /// small rows, not re-encode 1,000 observer documents.
    case lastEventID = "lastEventId"
    /// The posting queue (one row: NSNotificationQueue's `asap` and `idle` entries).
    case queue
    /// An idempotency key and the answer it keeps (section 7.3).
    case idempotency
    /// A query (section 12); its members are evaluated again when it is restored.
    case query
    /// A scoped token (section 13), live or ended (kept a day for its 401's reason).
    case token
}

/// What a durable store owes its data directory: the commands applied since the last commit
/// (each with its position: the command log's order), the entities changed since the last
/// checkpoint (what a checkpoint must write), and the logs whose events wait for durability.
///
/// Recording is an append; marking a set insert. Disabled (nothing recorded) when nothing
/// persists. Positions continue across restarts (`init(enabled:after:)`).
struct Journal: Sendable {
    let enabled: Bool
    /// The last position given (a rollback skips the ones it undid: see `skip`).
    private(set) var sequence: Int
    /// The position of the last command recorded: what an answer that recorded nothing (a
    /// deduplicated registration, an idempotent replay) waits for.
    private(set) var lastRecorded: Int
    /// The commands recorded since the last take: their positions and encodings.
    private(set) var commands: [(position: Int, bytes: [UInt8])] = []
    private(set) var changed: [EntityKind: Set<String>] = [:]
    /// Event logs with events that become visible to streams when their command is durable,
    /// and the id of the last such event in each.
    private(set) var logs: [ObjectIdentifier: (log: EventLog, through: Int)] = [:]
    /// Commands recorded since the last checkpoint was taken.
    private(set) var sinceCheckpoint = 0

    init(enabled: Bool, after position: Int = 0) {
        self.enabled = enabled
        self.sequence = position
        self.lastRecorded = position
    }

    /// Nothing waits to be committed.
    var isEmpty: Bool { commands.isEmpty && logs.isEmpty }

    /// Records a command that was applied (it changed the state), by its encoding; returns its position.
    mutating func record(_ encoded: [UInt8]) -> Int? {
        guard enabled else { return nil }
        sequence += 1
        lastRecorded = sequence
        sinceCheckpoint += 1
        commands.append((sequence, encoded))
        return sequence
    }

    mutating func mark(_ kind: EntityKind, _ id: String) {
        guard enabled else { return }
        changed[kind, default: []].insert(id)
    }

    /// Gates a log's events up to `id`: streams see them once the command that made them is
    /// durable (the batch that takes them publishes them).
    mutating func gate(_ log: EventLog, through id: Int) {
        guard enabled else { return }
        logs[ObjectIdentifier(log)] = (log, id)  // ids only grow
    }

    /// The logs with gated (unpublished) events, in no particular order.
    var gatedLogs: [(log: EventLog, through: Int)] { Array(logs.values) }

    /// Hands over the commands and gated logs since the last take.
    mutating func takeCommands() -> (
        commands: [(position: Int, bytes: [UInt8])], logs: [(log: EventLog, through: Int)]
    ) {
        let taken = commands
        // Room for a batch like this one: the next batch grows into it instead of through
        // every power of two (whose larger steps make malloc consolidate its free lists).
        commands = []
        commands.reserveCapacity(taken.count)
        defer { logs = [:] }
        return (taken, Array(logs.values))
    }

    /// Hands over the entities changed since the last checkpoint.
    mutating func takeChanged() -> [EntityKind: Set<String>] {
        defer {
            changed = [:]
            sinceCheckpoint = 0
        }
        return changed
    }

    /// Continues positions after `position` (never back): after a rollback, the positions of the
    /// commands it undid are never given again, so an answer waiting on one is never released by
    /// a later commit.
    mutating func skip(to position: Int) {
        sequence = max(sequence, position)
    }

    /// The command just recorded is at `position` (replaying a stored log, gaps and all).
    mutating func recorded(at position: Int) {
        sequence = max(sequence, position)
        lastRecorded = sequence
    }

    /// Forgets held logs and recorded commands (they came from the data directory: durable already).
    mutating func settleReplayed() {
        commands = []
        logs = [:]
    }
}
