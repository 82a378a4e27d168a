// MARK: - Observers: lifecycle, leases and streams

extension StoreState {
    mutating func createObserver(_ settings: ObserverSettings, at now: Moment) throws(CoreError) -> CreatedObserver {
        if let name = settings.name { try Names.checkID(name, "observer name") }
        guard ObserverSettings.leaseRange.contains(settings.lease) else {
            throw CoreError(.invalidRequest, "lease must be 1–86400 seconds", details: ["field": "lease"])
        }
        guard ObserverSettings.replayRange.contains(settings.replay) else {
            throw CoreError(.invalidRequest, "replay must be 1–100000 events", details: ["field": "replay"])
        }
        guard observers.count < limits.maxObservers else {
            throw CoreError(
                .limitExceeded, "the server holds its limit of \(limits.maxObservers) observers",
                details: ["limit": .int(limits.maxObservers)])
        }
        var id = RandomID.make("obs_")
        while observers[id] != nil { id = RandomID.make("obs_") }
        let deadline = now.instant + .seconds(settings.lease)
        let record = ObserverRecord(
            id: id, name: settings.name ?? id, token: RandomID.make("", bytes: 24), lease: settings.lease,
            retainObserved: settings.retainObserved, createdAt: now.wall,
            log: EventLog(capacity: settings.replay, maxBytes: limits.maxReplayBytes, gated: journal.enabled),
            expiresAt: deadline)
        observers[id] = record
        journal.mark(.observer, id)
        observersByToken[record.token] = id
        leaseDeadlines.schedule(id, at: deadline)
        let revision = nextRevision()
        let snapshot = observerSnapshot(record, at: now, withRegistrations: false)
        appendAdmin("observerCreated", ["observer": .object(snapshot.summaryJSON), "revision": .int(revision)])
        return CreatedObserver(observer: snapshot, token: record.token)
    }

    func existingObserver(_ id: String) throws(CoreError) -> ObserverRecord {
        guard let observer = observers[id] else { throw CoreError.notFound("observer", id) }
        return observer
    }

    func observerSnapshot(_ observer: ObserverRecord, at now: Moment, withRegistrations: Bool) -> ObserverSnapshot {
        let ids = observer.registrationsByTarget.values
        let registrations =
            withRegistrations
            ? ids.compactMap { self.registrations[$0] }.sorted { $0.sequence < $1.sequence }.map(\.snapshot) : []
        let subscriptionList =
            withRegistrations
            ? observer.subscriptionsByTarget.values.compactMap { subscriptions[$0] }.sorted {
                $0.sequence < $1.sequence
            }
            .map(\.snapshot) : []
        return ObserverSnapshot(
            id: observer.id, name: observer.name, lease: observer.lease, retainObserved: observer.retainObserved,
            replay: observer.log.capacity, createdAt: observer.createdAt, streams: observer.streams,
            expiresAt: observer.expiresAt.map { now.wall(at: $0) }, observations: ids.count,
            subscriptions: observer.subscriptionsByTarget.count,
            lastEventID: observer.log.lastID, backlog: observer.log.backlog, dropped: observer.log.droppedStreams,
            registrations: registrations, subscriptionList: subscriptionList)
    }

    /// Removes an observer and everything it owns (unobserveAll), as `DELETE` or lease expiry.
    mutating func removeObserver(_ id: String, reason: String) throws(CoreError) -> Int {
        let observer = try existingObserver(id)
        let revision = nextRevision()
        let owned = observer.registrationsByTarget.values.compactMap { registrations[$0] }.sorted {
            $0.sequence < $1.sequence
        }
        for registration in owned {
            removeRegistration(registration, reason: "observerRemoved", revision: revision)
        }
        let subscribed = observer.subscriptionsByTarget.values.compactMap { subscriptions[$0] }.sorted {
            $0.sequence < $1.sequence
        }
        for subscription in subscribed {
            removeSubscription(subscription, reason: "observerRemoved", revision: revision)
        }
        observers[id] = nil
        leaseDeadlines.cancel(id)
        journal.mark(.observer, id)
        journal.mark(.lastEventID, id)
        observersByToken[observer.token] = nil
        observer.log.close()
        touchedLogs[ObjectIdentifier(observer.log)] = observer.log
        appendAdmin(
            "observerRemoved", ["observer": .string(id), "reason": .string(reason), "revision": .int(revision)])
        releaseObjects(owned.map(\.objectID), revision: revision)
        return revision
    }

    /// Restarts the lease count (it only counts while no stream is connected).
    mutating func keepalive(_ id: String, at now: Moment) throws(CoreError) -> Timestamp? {
        var observer = try existingObserver(id)
        guard observer.streams == 0 else { return nil }
        let deadline = now.instant + .seconds(observer.lease)
        observer.expiresAt = deadline
        observers[id] = observer
        leaseDeadlines.schedule(id, at: deadline)
        return now.wall(at: deadline)
    }

    /// Removes every observer whose lease ran out by `now`; returns their ids.
    mutating func expireLeases(at now: Moment) -> [String] {
        var expired: [String] = []
        while let next = leaseDeadlines.first, next.deadline <= now.instant {
            _ = leaseDeadlines.popFirst()
            if (try? removeObserver(next.id, reason: "expired")) != nil { expired.append(next.id) }
        }
        return expired
    }

    /// The earliest lease deadline.
    var nextLeaseDeadline: ContinuousClock.Instant? { leaseDeadlines.first?.deadline }

    // MARK: Streams

    /// Counts a new event stream of `observerID` (nil: the admin stream); it holds the lease.
    mutating func openStream(of observerID: String?) throws(CoreError) -> EventLog {
        guard streams < limits.maxStreams else {
            throw CoreError(
                .limitExceeded, "the server holds its limit of \(limits.maxStreams) event streams",
                details: ["limit": .int(limits.maxStreams)])
        }
        guard let observerID else {
            streams += 1
            return adminLog
        }
        var observer = try existingObserver(observerID)
        observer.streams += 1
        observer.expiresAt = nil
        observers[observerID] = observer
        leaseDeadlines.cancel(observerID)
        streams += 1
        return observer.log
    }

    /// Counts a stream as closed; the last one to close restarts the lease.
    mutating func closeStream(of observerID: String?, at now: Moment) {
        streams -= 1
        guard let observerID, var observer = observers[observerID] else { return }
        observer.streams -= 1
        if observer.streams == 0 {
            let deadline = now.instant + .seconds(observer.lease)
            observer.expiresAt = deadline
            leaseDeadlines.schedule(observerID, at: deadline)
        }
        observers[observerID] = observer
    }
}

extension ObserverSnapshot {
    /// The fields of the observer list (`GET /v1/observers`).
    public var summaryJSON: JSONObject {
        [
            "id": .string(id), "name": .string(name), "connected": .bool(streams > 0), "streams": .int(streams),
            "expiresAt": expiresAt.map { .string($0.rfc3339) } ?? .null, "observations": .int(observations),
            "subscriptions": .int(subscriptions), "lastEventId": .int(lastEventID), "backlog": .int(backlog),
            "dropped": .int(dropped), "lease": .int(lease), "retainObserved": .bool(retainObserved),
            "replay": .int(replay), "createdAt": .string(createdAt.rfc3339),
        ]
    }
}
