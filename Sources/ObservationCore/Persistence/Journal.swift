/// The kinds of persisted entities: each is one table of rows keyed by id.
public enum EntityKind: String, Sendable, CaseIterable {
    case `class`, object, observer, registration, subscription
    /// An observer's last event id, kept apart from its document: it changes with every
    /// event, and a write seen by 1,000 observers should write 1,000 small rows, not
    /// re-encode 1,000 observer documents.
    case lastEventID = "lastEventId"
}

/// What changed since the last commit: the ids of entities to write (or delete, when
/// they are gone), gathered under the store's lock by the operations that change them.
///
/// Marking is a set insert; a batch writes each entity once however often it changed
/// (the commit is of state, not of operations). Disabled (no marks) when nothing persists.
struct Journal: Sendable {
    let enabled: Bool
    private(set) var changed: [EntityKind: Set<String>] = [:]
    /// Event logs with events that become visible to streams when the batch is durable.
    private(set) var logs: [ObjectIdentifier: EventLog] = [:]
    /// Counts store operations that changed something; a commit that took the journal at
    /// sequence `n` made every change up to `n` durable.
    private(set) var sequence = 0
    /// Whether something was marked since the last `advance`.
    private var open = false

    init(enabled: Bool) { self.enabled = enabled }

    var isEmpty: Bool { changed.isEmpty && logs.isEmpty }

    mutating func mark(_ kind: EntityKind, _ id: String) {
        guard enabled else { return }
        changed[kind, default: []].insert(id)
        open = true
    }

    /// Holds back events until the batch that made them is durable.
    mutating func hold(_ touched: some Sequence<EventLog>) {
        for log in touched { logs[ObjectIdentifier(log)] = log }
        open = true
    }

    /// Ends one store operation; returns the new sequence if it changed something.
    mutating func advance() -> Int? {
        guard open else { return nil }
        open = false
        sequence += 1
        return sequence
    }

    /// Hands over what changed and starts afresh.
    mutating func take() -> (changed: [EntityKind: Set<String>], logs: [EventLog]) {
        defer {
            changed = [:]
            logs = [:]
        }
        return (changed, Array(logs.values))
    }
}
