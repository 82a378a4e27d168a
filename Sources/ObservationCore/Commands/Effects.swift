/// What applying a command asks of the world outside the state: events for the logs (each
/// with the id the state gave it), logs to close, and whether the timer must look at its
/// deadlines again. Collected while a command applies; performed by the `Outbox` after the
/// store's lock is released, in the order the commands were applied.
public struct Effects: Sendable {
    /// Events in the order they were made, with their logs (observers' and the admin stream's).
    var events: [LoggedEvent] = []
    /// Logs whose observer went away: closed after their last events.
    var closedLogs: [EventLog] = []
    /// Delivery barriers: each stream of the log gets a `progress` at this revision once it has
    /// every event the log holds now.
    var barriers: [(log: EventLog, revision: Int)] = []
    /// Tokens (stored ones, or JWT ids) that were revoked or expired: the streams opened with
    /// them get `revoked` and end (section 13). With the reason.
    public internal(set) var endedTokens: [(id: String, reason: String)] = []
    /// A lease deadline moved, or a posting was queued: the timer must look again.
    public internal(set) var timerMustLook = false
    /// The global revision once the command is applied (a refused command: the one before).
    public internal(set) var revision = 0

    public init() {}

    /// Adds an event for `log`. Room for a few at the first: a write makes two or three
    /// (the admin stream's and its observers'), which one allocation holds.
    mutating func add(_ event: Event, to log: EventLog) {
        if events.capacity == 0 { events.reserveCapacity(4) }
        events.append(LoggedEvent(log: log, event: event))
    }

    /// Empties every list, keeping its storage, and clears the flags.
    mutating func empty() {
        events.emptyKeepingCapacity()
        closedLogs.emptyKeepingCapacity()
        barriers.emptyKeepingCapacity()
        endedTokens.emptyKeepingCapacity()
        timerMustLook = false
        revision = 0
    }

    /// Whether no list has room for more than `capacity` (what an emptied one may keep).
    func fits(within capacity: Int) -> Bool {
        events.capacity <= capacity && closedLogs.capacity <= capacity && barriers.capacity <= capacity
            && endedTokens.capacity <= capacity
    }

    var isEmpty: Bool {
        events.isEmpty && closedLogs.isEmpty && barriers.isEmpty && !timerMustLook && endedTokens.isEmpty
    }

    /// The events made, with the label of the log each goes to (an observer's id, or `admin`).
    public var madeEvents: [(log: String, event: Event)] { events.map { ($0.log.label, $0.event) } }
}

/// An event with its log. A struct, not a tuple: an array of tuples is destroyed through the
/// runtime's generic tuple witness, element by element and field by field.
struct LoggedEvent: Sendable {
    let log: EventLog
    let event: Event
}
