// MARK: - Observers, registrations, streams

/// What `observe` answers: each registration asked for, and whether it already existed.
public struct ObserveResult: Sendable {
    public let registrations: [(registration: RegistrationSnapshot, deduplicated: Bool)]
    /// The revision taken, nil when every pair was already registered (nothing changed).
    public let revision: Int?
}

extension Store {
    public func createObserver(_ settings: ObserverSettings) throws(CoreError) -> CreatedObserver {
        let now = Moment.now()
        return try change { state throws(CoreError) in try state.createObserver(settings, at: now) }
    }

    /// Every observer, in creation order.
    public func observers() -> [ObserverSnapshot] {
        let now = Moment.now()
        return state.withLock { state in
            state.observers.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
                .map { state.observerSnapshot($0, at: now, withRegistrations: false) }
        }
    }

    /// One observer, with its registrations.
    public func observer(_ id: String) throws(CoreError) -> ObserverSnapshot {
        let now = Moment.now()
        return try read { state throws(CoreError) in
            state.observerSnapshot(try state.existingObserver(id), at: now, withRegistrations: true)
        }
    }

    /// Removes an observer and all it owns (unobserveAll); returns the revision.
    public func deleteObserver(_ id: String) throws(CoreError) -> Int {
        try change { state throws(CoreError) in try state.removeObserver(id, reason: "deleted") }
    }

    /// Restarts the lease; returns when it now runs out (nil while a stream holds it).
    public func keepalive(_ id: String) throws(CoreError) -> Timestamp? {
        let now = Moment.now()
        return try change(needsDisk: false) { state throws(CoreError) in try state.keepalive(id, at: now) }
    }

    /// Registers key paths of an object for an observer (deduplicated per pair).
    public func observe(
        observerID: String, objectID: String, keyPaths: [String], options: ObservationOptions, context: JSON?
    ) throws(CoreError) -> ObserveResult {
        let now = Moment.now()
        let outcome = try change { state throws(CoreError) in
            try state.observe(
                observerID: observerID, objectID: objectID, keyPaths: keyPaths, options: options, context: context,
                at: now)
        }
        return ObserveResult(registrations: outcome.registrations, revision: outcome.revision)
    }

    /// Removes registrations: by id, by object and key path, by object, or all (no filter).
    /// Returns the revision, or nil when unobserveAll found nothing to remove.
    public func unobserve(
        observerID: String, registrationID: String? = nil, objectID: String? = nil, keyPath: String? = nil
    ) throws(CoreError) -> Int? {
        try change { state throws(CoreError) in
            try state.unobserve(
                observerID: observerID, registrationID: registrationID, objectID: objectID, keyPath: keyPath)
        }
    }

    // MARK: Leases

    /// Removes the observers whose lease ran out; returns their ids.
    @discardableResult
    public func expireLeases() -> [String] {
        let now = Moment.now()
        return (try? change(needsDisk: false) { state in state.expireLeases(at: now) }) ?? []
    }

    /// When the next lease may run out.
    public var nextLeaseDeadline: ContinuousClock.Instant? { state.withLock { $0.nextLeaseDeadline } }

    // MARK: Streams

    /// Opens an event stream on an observer's log (nil: the admin log). Close it with `closeStream`.
    public func openStream(of observerID: String?) throws(CoreError) -> EventLog {
        try read { state throws(CoreError) in try state.openStream(of: observerID) }
    }

    public func closeStream(of observerID: String?) {
        let now = Moment.now()
        state.withLock { $0.closeStream(of: observerID, at: now) }
    }

    /// What a client that fell out of the replay buffer needs to rebuild its state: one
    /// `change` record with `"initial": true` and the current value per registration (no ids),
    /// in registration order. One batch at a time: the registrations after the one with
    /// sequence `after`, until the records reach `maxBytes` (at least one). Returns the
    /// records and the sequence of the last, or nil when no registration follows `after`.
    public func rebuildRecords(of observerID: String, after: Int, maxBytes: Int) -> (records: [Event], last: Int)? {
        state.withLock { state in
            guard let observer = state.observers[observerID] else { return nil }
            let pending = observer.registrationsByTarget.values.compactMap { id -> Registration? in
                guard let registration = state.registrations[id], registration.sequence > after else { return nil }
                return registration
            }
            .sorted { $0.sequence < $1.sequence }
            guard !pending.isEmpty else { return nil }
            var records: [Event] = []
            var bytes = 0
            for registration in pending {
                if !records.isEmpty, bytes >= maxBytes { break }
                var record = ChangeRecord(revision: state.revision)
                record.flag = .initial
                record.new = (try? state.read(registration.keyPath, of: registration.objectID)) ?? .null
                let event = Event(
                    id: 0, name: "change", data: ChangeRecord.encode(registration, tail: record.encodedTail()))
                bytes += event.heldBytes
                records.append(event)
            }
            return (records, pending[records.count - 1].sequence)
        }
    }

    /// The observer a token belongs to (section 9), nil for an unknown token.
    public func observerID(forToken token: String) -> String? { state.withLock { $0.observersByToken[token] } }
}
