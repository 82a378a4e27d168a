// MARK: - Observers, registrations, streams

/// What creating an observer returns: its snapshot and its token, shown once.
public struct CreatedObserver: Sendable {
    public let observer: ObserverSnapshot
    public let token: String
}

extension StoreSession {
    /// Creates an observer with a fresh id and token (the state keeps only the token's hash).
    public func createObserver(_ settings: ObserverSettings) throws(CoreError) -> CreatedObserver {
        let token = RandomID.make("", bytes: 24)
        let snapshot = expected(
            try issue(
                .createObserver(
                    id: RandomID.make("obs_"), tokenHash: TokenHash.of(token), name: settings.name,
                    lease: settings.lease, retainObserved: settings.retainObserved, replay: settings.replay,
                    client: settings.client))
        ) {
            if case .observerCreated(let snapshot) = $0 { snapshot } else { nil }
        }
        return CreatedObserver(observer: snapshot, token: token)
    }

    /// The observers the caller may use, in creation order: every one for the admin, those a
    /// token made for it, its own for an observer's token.
    public func observers() throws(CoreError) -> [ObserverSnapshot] {
        try read { state, reader in
            let ids: [String]
            switch reader.principal {
            case .admin, .server, .nobody: ids = state.observers.all.map(\.id)
            case .observer(let own): ids = state.observers[own] == nil ? [] : [own]
            case .token, .jwt:
                guard let tokenID = reader.access?.tokenID else { return [] }
                ids = state.observers.made(by: tokenID).compactMap { state.observers[$0] }
                    .sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }.map(\.id)
            }
            return ids.map { state.observerSnapshot($0, withRegistrations: false) }
        }
    }

    /// One observer, with its registrations.
    public func observer(_ id: String) throws(CoreError) -> ObserverSnapshot {
        try read { state, reader throws(CoreError) in
            try check(state.observerQuestion(id), reader)
            _ = try state.observers.existing(id)
            return state.observerSnapshot(id, withRegistrations: true)
        }
    }

    /// Removes an observer and all it owns (unobserveAll); returns the revision.
    public func deleteObserver(_ id: String) throws(CoreError) -> Int {
        expected(try issue(.deleteObserver(observer: id))) {
            if case .removed(let revision?) = $0 { revision } else { nil }
        }
    }

    /// Restarts the lease; returns when it now runs out (nil while a stream holds it).
    public func keepalive(_ id: String) throws(CoreError) -> Timestamp? {
        expected(try issue(.keepalive(observer: id))) {
            if case .leaseRenewed(let expiresAt) = $0 { expiresAt } else { nil }
        }
    }

    /// Registers key paths of an object for an observer (deduplicated per pair).
    public func observe(
        observerID: String, objectID: String, keyPaths: [String], options: ObservationOptions, context: JSON?
    ) throws(CoreError) -> ObserveResult {
        let ids = keyPaths.map { _ in RandomID.make("reg_") }
        return expected(
            try issue(
                .observe(
                    observer: observerID, object: objectID, keyPaths: keyPaths, options: options.nameList,
                    context: context, registrationIDs: ids))
        ) {
            if case .observed(let result) = $0 { result } else { nil }
        }
    }

    /// Removes registrations: by id, by object and key path, by object, or all (no filter).
    /// Returns the revision, or nil when unobserveAll found nothing to remove.
    public func unobserve(
        observerID: String, registrationID: String? = nil, objectID: String? = nil, keyPath: String? = nil
    ) throws(CoreError) -> Int? {
        let outcome = try issue(
            .unobserve(observer: observerID, registration: registrationID, object: objectID, keyPath: keyPath))
        return if case .removed(let revision) = outcome { revision } else { nil }
    }

}

// MARK: - What the server itself does and reads: leases, streams, replay rebuilds

extension Store {
    /// Removes the observers whose lease ran out; returns their ids.
    @discardableResult
    public func expireLeases() -> [String] {
        let outcome = try? self.as(.server).issue(.expireLeases)
        return if case .expired(let ids)? = outcome { ids } else { [] }
    }

    /// When the next lease may run out.
    public var nextLeaseDeadline: Timestamp? { state.withLock { $0.observers.nextLeaseDeadline } }

    /// When the first throttled registration's window ends with folded changes to send (`flushThrottled`).
    public var nextThrottleDeadline: Timestamp? {
        state.withLock { $0.throttled.first.map { Timestamp(milliseconds: $0.deadline) } }
    }

    // MARK: Streams

    /// Opens an event stream on an observer's log (nil: the admin log). Close it with `closeStream`.
    public func openStream(of observerID: String?) throws(CoreError) -> EventLog {
        expected(try self.as(.server).issue(.openStream(observer: observerID, holder: nil))) {
            if case .streamOpened(let log) = $0 { log } else { nil }
        }
    }

    /// The log an observer's streams read (nil: the admin log), without opening a stream (a
    /// cluster node opens streams through the cluster's log).
    public func eventLog(of observerID: String?) throws(CoreError) -> EventLog {
        try state.withLock { state throws(CoreError) in
            guard let observerID else { return state.adminLog }
            return try state.observers.existing(observerID).log
        }
    }

    public func closeStream(of observerID: String?) {
        _ = try? self.as(.server).issue(.closeStream(observer: observerID, holder: nil))
    }

    /// What a client that fell out of the replay buffer needs to rebuild its state: one
    /// `change` record with `"initial": true` and the current value per registration (no ids),
    /// in registration order. One batch at a time: the registrations after the one with
    /// sequence `after`, until the records reach `maxBytes` (at least one) or number `limit`.
    /// Returns the records, the sequence of the last, and whether more registrations follow
    /// it; nil when no registration follows `after`.
    public func rebuildRecords(of observerID: String, after: Int, maxBytes: Int, limit: Int = .max)
        -> (records: [Event], last: Int, more: Bool)?
    {
        state.withLock { state in
            // Observations and queries in creation order: a query's record is its whole window.
            var pending: [(sequence: Int, record: () -> Event)] = []
            for registration in state.registrations.owned(by: observerID) where registration.sequence > after {
                pending.append(
                    (
                        registration.sequence,
                        { [state] in
                            var record = ChangeRecord(revision: state.revision)
                            record.flag = .initial
                            record.new =
                                (try? state.graph.read(
                                    registration.keyPath, of: registration.objectID, filter: registration.reader))
                                ?? .null
                            return Event(id: 0, name: "change", data: ChangeRecord.encode(registration, record: record))
                        }
                    ))
            }
            for query in state.queries.owned(by: observerID) where query.sequence > after {
                pending.append(
                    (query.sequence, { [state] in Event(id: 0, name: "query", data: state.rebuildRecord(query)) }))
            }
            guard !pending.isEmpty else { return nil }
            pending.sort { $0.sequence < $1.sequence }
            var records: [Event] = []
            var bytes = 0
            for item in pending {
                if !records.isEmpty, bytes >= maxBytes || records.count >= limit { break }
                let event = item.record()
                bytes += event.footprint
                records.append(event)
            }
            return (records, pending[records.count - 1].sequence, records.count < pending.count)
        }
    }

    /// The observer a token belongs to (section 9), nil for an unknown token.
    public func observerID(forToken token: String) -> String? {
        let hash = TokenHash.of(token)
        return state.withLock { $0.observers.observerID(forTokenHash: hash) }
    }
}

extension Store {
    /// Every delivering observer (section 16), in id order: the deliverer's view of the state.
    public func deliveringObservers() -> [DeliveringObserver] {
        state.withLock { $0.deliveringObservers }
    }
}
