/// Everything the store holds, as parts that own their fields, and `apply(command)`: the one
/// way it changes.
///
/// | part | owns |
/// |---|---|
/// | `graph` (`ObjectGraph`) | classes, objects, values, id indexes; key-value coding |
/// | `registrations` (`RegistrationIndex`) | registrations and their indexes (dedup, by object, dependencies) |
/// | `queries` (`QueryBook`) | queries, the evaluations they share, and the indexes a write finds them by |
/// | `observers` (`ObserverTable`) | observers, token hashes, leases, stream counts, event ids |
/// | `center` (`NotificationCenter`) | subscriptions, their tables, the posting queue |
/// | `tokens` (`TokenTable`) | scoped tokens, their secrets' hashes and expiries, tokens that ended |
/// | here | the revision, the clock, the admin stream's ids, the journal, the effects of the command being applied |
///
/// The operations (`StoreState+…`) are short transactions over these parts: they validate
/// completely before they change anything, so a refused command leaves no trace and takes
/// no revision. The propagator (`StoreState+Propagation`) turns a write into change records.
///
/// Deterministic: applying reads no clock (the command's time is the time), no random source
/// (ids come in the command), and no hash order reaches its answer or its effects.
/// Not thread-safe by itself: `Store` keeps it behind its one lock.
struct StoreState: Sendable {
    var graph = ObjectGraph()
    var registrations = RegistrationIndex()
    var queries = QueryBook()
    var observers = ObserverTable()
    var center: NotificationCenter
    var tokens = TokenTable()
    var limits: StoreLimits

    /// The global revision: the last one a successful change took.
    var revision = 0
    /// The time of the latest command applied: time inside apply never goes backwards.
    var clock = Timestamp(milliseconds: 0)
    /// The client that made the command being applied (`Command.by`).
    var by: String?
    /// The id of the transaction being applied (section 15): the `tx` of what it causes.
    var tx: String?
    /// Throttled registrations holding folded changes, by when their window ends (ms).
    var throttled = DeadlineHeap<Int64>()
    /// Idempotency keys and the answers they keep (section 7.3).
    var idempotency = IdempotencyTable()
    /// How answers are rendered for the keys to keep (the server's own rendering).
    let renderer: AnswerRenderer
    /// Applying journaled commands again at start (`replay`): idempotency keys are not checked.
    var replaying = false
    let adminLog: EventLog
    /// The id of the admin stream's last event.
    var adminLastEventID = 0
    /// What changed since the last checkpoint (persistence).
    var journal: Journal
    /// Why clients' writes are refused now (the data directory cannot take them), and when to retry.
    var outage: Outage?
    /// The effects of the command being applied (taken by `apply`).
    var effects = Effects()
    /// The last change's record batch, emptied with its lists' storage, for the next change's.
    var spareBatch: RecordBatch?
    /// The writes of the current revision that queries have yet to see: they get one record
    /// each for all of them, once the revision is complete (section 12).
    var queryChanges: [QueryChange] = []
    /// Logs that restoring gives back to their observers instead of new ones (a rollback: the
    /// streams reading them stay attached), by observer id.
    var reusableLogs: [String: EventLog] = [:]

    /// `adminLog`: the admin stream's log to keep (a rollback), or nil for a new one.
    init(limits: StoreLimits, persistent: Bool = false, renderer: AnswerRenderer = .plain, adminLog: EventLog? = nil) {
        self.limits = limits
        self.renderer = renderer
        self.journal = Journal(enabled: persistent)
        self.center = NotificationCenter(queue: NotificationQueue())
        self.adminLog =
            adminLog
            ?? EventLog(
                label: "admin", capacity: limits.adminReplay, maxBytes: limits.maxAdminReplayBytes, gated: persistent)
    }

    /// The log a rollback keeps for observer `id` (nil: make a new one).
    func reusableLog(_ id: String) -> EventLog? {
        reusableLogs.isEmpty ? nil : reusableLogs[id]
    }

    /// Takes the next revision (the queries first get their records for the one before).
    mutating func nextRevision() -> Int {
        if !queryChanges.isEmpty { flushQueryChanges() }
        revision += 1
        return revision
    }

    /// A snapshot of an object, with the observers that retain it.
    func snapshot(_ object: StoredObject, filter: ReadFilter? = nil) -> ObjectSnapshot {
        graph.snapshot(object, retainedBy: retainers(of: object.id), filter: filter)
    }

    /// An id for something new: `candidate` (from the command), or, in the unlikely case it is
    /// taken, the first of `candidate-1`, `candidate-2`, … that is free (the same on every replica).
    static func freshID(_ candidate: String, taken: (String) -> Bool) -> String {
        guard taken(candidate) else { return candidate }
        var suffix = 1
        while taken("\(candidate)-\(suffix)") { suffix += 1 }
        return "\(candidate)-\(suffix)"
    }
}
