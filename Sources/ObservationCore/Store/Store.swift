import Synchronization

/// The observation service's state: classes, objects and their values, under one global revision.
///
/// Thread-safe: all state lives in one `StoreState` behind one lock (`Locked`); every
/// public method takes the lock once, does its work, and returns a value
/// snapshot. Nothing is called out while the lock is held. A method that
/// throws has changed nothing and taken no revision.
public final class Store: Sendable {
    let state: Locked<StoreState>
    /// The journal's sequence, readable without the lock (persistent stores only).
    let sequenceCounter = Atomic<Int>(0)
    /// The committer's wake-up call. Boxed: a bare closure as a lock's generic state is
    /// re-wrapped in a reabstraction thunk by every inout access, a chain that grows per call.
    let journalHandler = Locked<JournalHandler?>(nil)

    /// An in-memory store.
    public convenience init(limits: StoreLimits = StoreLimits()) {
        self.init(state: StoreState(limits: limits))
    }

    init(state: StoreState) {
        self.state = Locked(state)
    }

    /// Runs a mutating operation under the lock. After the lock is released, it wakes the
    /// streams of every log it appended to (in memory), or signals the committer (persistent:
    /// the journal holds the logs back until their batch is durable).
    ///
    /// A client's write (`needsDisk`) is refused with `unavailable` while the data directory
    /// cannot take writes, before it changes anything. Background changes (leases running out,
    /// queued postings going out) and writes nothing stores (a keepalive) go on: their events
    /// wait in the journal like any other until a commit succeeds.
    func change<T>(needsDisk: Bool = true, _ body: (inout StoreState) throws(CoreError) -> T) throws(CoreError) -> T {
        let (result, logs, signal) = try state.withLock { state throws(CoreError) in
            if needsDisk, let outage = state.outage { throw outage.error }
            let wasEmpty = state.journal.isEmpty
            let result = try body(&state)
            var wake: [EventLog] = []
            if !state.touchedLogs.isEmpty {
                if state.journal.enabled {
                    state.journal.hold(state.touchedLogs.values)
                } else {
                    wake = Array(state.touchedLogs.values)
                }
                state.touchedLogs.removeAll(keepingCapacity: true)
            }
            guard let sequence = state.journal.advance() else { return (result, wake, false) }
            sequenceCounter.store(sequence, ordering: .releasing)
            return (result, wake, wasEmpty)
        }
        for log in logs { log.wake() }
        if signal { journalHandler.withLock { $0 }?.wake() }
        return result
    }

    /// Reads under the lock.
    func read<T>(_ body: (inout StoreState) throws(CoreError) -> T) throws(CoreError) -> T {
        try state.withLock { state throws(CoreError) in try body(&state) }
    }

    // MARK: - Classes

    /// Creates or replaces the class `name` from `{"properties": {...}}`.
    public func defineClass(_ name: String, definition: JSON) throws(CoreError) -> (ClassSnapshot, created: Bool) {
        try change { state throws(CoreError) in try state.defineClass(name, definition: definition) }
    }

    public func classes() -> [ClassSnapshot] {
        state.withLock { state in state.classes.keys.sorted().compactMap { state.classSnapshot($0) } }
    }

    public func classInfo(_ name: String) throws(CoreError) -> ClassSnapshot {
        guard let snapshot = state.withLock({ $0.classSnapshot(name) }) else { throw CoreError.notFound("class", name) }
        return snapshot
    }

    /// Deletes a class no object uses; returns the revision.
    public func deleteClass(_ name: String) throws(CoreError) -> Int {
        try change { state throws(CoreError) in try state.deleteClass(name) }
    }

    // MARK: - Objects

    /// Creates an object (with a generated id when `id` is nil).
    public func createObject(id: String?, className: String?, values: JSONObject) throws(CoreError) -> ObjectSnapshot {
        let now = Timestamp.now()
        return try change { state throws(CoreError) in
            try state.createObject(id: id, className: className, values: values, now: now)
        }
    }

    /// Objects in id order, `limit` at a time, after the cursor `after`.
    public func objects(className: String?, limit: Int, after cursor: String?) throws(CoreError) -> ObjectPage {
        try state.withLock { state throws(CoreError) in
            try state.listObjects(className: className, limit: limit, after: cursor)
        }
    }

    public func object(_ id: String) throws(CoreError) -> ObjectSnapshot {
        try state.withLock { state throws(CoreError) in state.snapshot(try state.existingObject(id)) }
    }

    /// Sets several keys atomically under one revision; returns it.
    public func patch(_ id: String, values: JSONObject, ifRevision: Int? = nil) throws(CoreError) -> Int {
        try change { state throws(CoreError) in try state.patch(values, of: id, ifRevision: ifRevision) }
    }

    /// Deletes an object, or marks it `releasePending` while observers retain it.
    public func deleteObject(_ id: String) throws(CoreError) -> DeleteOutcome {
        try change { state throws(CoreError) in try state.deleteObject(id) }
    }

    // MARK: - Values (KVC)

    /// `valueForKeyPath:`; also returns the object's revision.
    public func value(of id: String, at keyPath: String) throws(CoreError) -> (value: JSON, revision: Int) {
        let path = try KeyPath(keyPath)
        return try state.withLock { state throws(CoreError) in
            let object = try state.existingObject(id)
            try state.checker.check(path, from: object.className)
            return (try state.read(path, of: id), object.revision)
        }
    }

    /// `setValue:forKeyPath:`; returns the new revision.
    public func setValue(_ value: JSON, of id: String, at keyPath: String, ifRevision: Int? = nil) throws(CoreError)
        -> Int
    {
        let path = try KeyPath(keyPath)
        return try change { state throws(CoreError) in
            try state.setValue(value, at: path, of: id, ifRevision: ifRevision)
        }
    }

    /// Applies a to-many mutation to the array at `keyPath`; returns the new revision.
    public func mutate(_ id: String, at keyPath: String, _ mutation: ArrayMutation, ifRevision: Int? = nil)
        throws(CoreError) -> Int
    {
        let path = try KeyPath(keyPath)
        return try change { state throws(CoreError) in
            try state.mutate(mutation, at: path, of: id, ifRevision: ifRevision)
        }
    }

    /// `didChangeValueForKey:` (for `manual` keys): one record per registration on those key
    /// paths, `old` being the value at its last notification.
    public func notify(_ id: String, keyPaths: [String]) throws(CoreError) -> Int {
        guard !keyPaths.isEmpty else { throw CoreError(.invalidRequest, "keyPaths must not be empty") }
        var paths: [KeyPath] = []
        for text in keyPaths { paths.append(try KeyPath(text)) }
        return try change { state throws(CoreError) in
            let object = try state.existingObject(id)
            for path in paths { try state.checker.check(path, from: object.className) }
            let revision = state.nextRevision()
            state.notifyManually(id, keyPaths: paths, revision: revision)
            return revision
        }
    }

    // MARK: - Outages

    /// Refuses clients' writes (`unavailable`, retry after `retryAfter` seconds) until
    /// `acceptWrites()`: the data directory cannot take them now.
    public func refuseWrites(because reason: String, retryAfter: Int) {
        state.withLock { $0.outage = Outage(reason: reason, retryAfter: max(1, retryAfter)) }
    }

    /// Accepts writes again (a commit succeeded).
    public func acceptWrites() {
        state.withLock { $0.outage = nil }
    }

    /// Whether clients' writes are accepted now.
    public var isWritable: Bool { state.withLock { $0.outage == nil } }

    // MARK: - Stats

    public func stats() -> StoreStats {
        state.withLock { state in
            StoreStats(
                objects: state.objects.count, classes: state.classes.count, revision: state.revision,
                observers: state.observers.count, observations: state.registrations.count, streams: state.streams)
        }
    }

    /// What the bounded buffers hold (a pass over the observers: for `/metrics`, not a hot path).
    public func bufferFigures() -> BufferFigures {
        state.withLock { state in
            var events = 0
            var bytes = 0
            for observer in state.observers.values {
                let held = observer.log.held
                events += held.events
                bytes += held.bytes
            }
            let admin = state.adminLog.held
            return BufferFigures(
                replayEvents: events, replayBytes: bytes, adminReplayEvents: admin.events,
                adminReplayBytes: admin.bytes, leaseDeadlines: state.leaseDeadlines.count,
                queuedNotifications: state.notificationQueue.entries.count,
                queuedNotificationBytes: state.notificationQueue.bytes)
        }
    }
}
