// MARK: - Observers: lifecycle, leases and streams

extension StoreState {
    mutating func createObserver(
        id: String, tokenHash: String, settings: ObserverSettings, by principal: Principal, access: Access?,
        onRemove: JSON?, at time: Timestamp
    ) throws(CoreError) -> ObserverSnapshot {
        let patches = try removalPatches(onRemove, by: principal, access: access)
        let delivery = try deliveryTarget(settings.deliver, by: principal)
        if let name = settings.name { try Names.checkID(name, "observer name") }
        if let client = settings.client { try Names.checkID(client, "client name") }
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
        let id = Self.freshID(id) { observers[$0] != nil }
        var record = ObserverRecord(
            id: id, name: settings.name ?? id, tokenHash: tokenHash, lease: settings.lease,
            retainObserved: settings.retainObserved, client: settings.client, createdAt: time,
            log: reusableLog(id)
                ?? EventLog(
                    label: id, capacity: settings.replay, maxBytes: limits.maxReplayBytes, gated: journal.enabled),
            lastEventID: 0)
        record.access = access
        record.onRemove = patches
        record.delivery = delivery
        // A scoped token's writes carry its client (section 13); its observers skip that echo.
        if record.client == nil, let client = access?.client { record.client = client }
        observers.insert(record, at: time)
        journal.mark(.observer, id)
        effects.timerMustLook = true
        let revision = nextRevision()
        let snapshot = observerSnapshot(id, withRegistrations: false)
        emitAdmin("observerCreated", ["observer": .object(snapshot.summaryJSON), "revision": .int(revision)])
        return snapshot
    }

    func observerSnapshot(_ id: String, withRegistrations: Bool) -> ObserverSnapshot {
        guard let observer = observers[id] else { preconditionFailure("no observer \(id)") }
        var snapshot = ObserverSnapshot(
            id: observer.id, name: observer.name, lease: observer.lease, retainObserved: observer.retainObserved,
            replay: observer.log.capacity, createdAt: observer.createdAt, streams: observer.streams,
            expiresAt: observer.expiresAt, observations: registrations.count(of: id),
            subscriptions: center.count(of: id), queries: queries.count(of: id), lastEventID: observer.lastEventID,
            backlog: observer.log.backlog,
            dropped: observer.log.droppedStreams, client: observer.client,
            registrations: withRegistrations ? registrations.owned(by: id).map(\.snapshot) : [],
            subscriptionList: withRegistrations ? center.owned(by: id).map(\.snapshot) : [],
            queryList: withRegistrations ? queries.owned(by: id).map { querySnapshot($0) } : [])
        snapshot.tokenID = observer.access?.tokenID
        snapshot.onRemove = observer.onRemove.map(\.json)
        snapshot.delivery = observer.delivery
        snapshot.acknowledged = observer.acknowledged
        return snapshot
    }

    /// `onRemove` checked now (section 14): at most 16 patches, each of an existing object, with
    /// valid keys and values, that the token may write (400, 404, 403 otherwise): each decided
    /// as its own PATCH would be.
    func removalPatches(_ json: JSON?, by principal: Principal, access: Access?) throws(CoreError) -> [RemovalPatch] {
        guard let json, json != .null else { return [] }
        guard case .array(let items) = json, items.count <= RemovalPatch.max else {
            throw CoreError(
                .invalidRequest, "onRemove is a list of at most \(RemovalPatch.max) patches",
                details: ["field": "onRemove"])
        }
        var patches: [RemovalPatch] = []
        for (index, item) in items.enumerated() {
            guard case .object(let members) = item, case .string(let object)? = members["object"],
                case .object(let values)? = members["values"], members.count == 2
            else {
                throw CoreError(
                    .invalidRequest, "onRemove[\(index)] is {\"object\": id, \"values\": {…}}",
                    details: ["field": .string("onRemove[\(index)]")])
            }
            // The scopes first: a refusal tells nothing of ids outside them (as a PATCH's does).
            try check(.write, on: object, by: principal, access: access)
            _ = try graph.existingObject(object)
            _ = try patchTargets(values, of: object)
            patches.append(RemovalPatch(object: object, values: values))
        }
        return patches
    }

    /// Removes an observer and everything it owns (unobserveAll), as `DELETE` or lease expiry:
    /// under the same revision, the objects it owns are deleted (as `DELETE` would) and then its
    /// `onRemove` patches applied, each to an object still there (section 14).
    mutating func removeObserver(_ id: String, reason: String) throws(CoreError) -> Int {
        let removed = try observers.existing(id)
        let revision = nextRevision()
        let owned = registrations.owned(by: id)
        for registration in owned { removeRegistration(registration, reason: "observerRemoved", revision: revision) }
        for subscription in center.owned(by: id) {
            removeSubscription(subscription, reason: "observerRemoved", revision: revision)
        }
        for query in queries.owned(by: id) { removeQuery(query, reason: "observerRemoved", revision: revision) }
        if let record = observers.remove(id) { effects.closedLogs.append(record.log) }
        journal.mark(.observer, id)
        journal.mark(.lastEventID, id)
        emitAdmin("observerRemoved", ["observer": .string(id), "reason": .string(reason), "revision": .int(revision)])
        releaseObjects(owned.map(\.objectID), revision: revision)
        for object in (graph.owned[id] ?? []).sorted() { deleteOwned(object, revision: revision) }
        for patch in removed.onRemove where graph.objects[patch.object] != nil {
            // Checked at creation; a class replaced since may refuse a value: that patch is skipped.
            guard let targets = try? patchTargets(patch.values, of: patch.object) else { continue }
            applyPatch(targets, of: patch.object, revision: revision)
        }
        return revision
    }

    /// Restarts the lease count (it only counts while no stream is connected).
    mutating func keepalive(_ id: String, at time: Timestamp) throws(CoreError) -> Timestamp? {
        let expiresAt = try observers.keepalive(id, at: time)
        if expiresAt != nil { effects.timerMustLook = true }
        return expiresAt
    }

    /// Removes every observer whose lease ran out by `time`, earliest deadline first; returns their ids.
    mutating func expireLeases(at time: Timestamp) -> [String] {
        var expired: [String] = []
        for id in observers.dueLeases(at: time) where (try? removeObserver(id, reason: "expired")) != nil {
            expired.append(id)
        }
        return expired
    }

    // MARK: Streams

    /// Counts a new event stream of `observerID` (nil: the admin stream); it holds the lease.
    /// A cluster node's stream (`holder`) is not counted against `maxStreams`: each node limits its own.
    mutating func openStream(of observerID: String?, holder: String?) throws(CoreError) -> EventLog {
        if let observerID, observers[observerID]?.delivery != nil {
            throw CoreError(
                .conflict, "observer \(observerID) delivers its events to a URL: it cannot also open an event stream",
                details: ["observer": .string(observerID)])
        }
        let log = try observers.openStream(
            of: observerID, holder: holder, limit: holder == nil ? limits.maxStreams : .max)
        return log ?? adminLog
    }

    /// Counts a stream as closed; the last one to close restarts the lease.
    mutating func closeStream(of observerID: String?, holder: String?, at time: Timestamp) {
        observers.closeStream(of: observerID, holder: holder, at: time)
        if observerID != nil { effects.timerMustLook = true }
    }
}

extension ObserverSnapshot {
    /// The fields of the observer list (`GET /v1/observers`).
    public var summaryJSON: JSONObject {
        let members: JSONObject = [
            "id": .string(id), "name": .string(name), "connected": .bool(streams > 0), "streams": .int(streams),
            "expiresAt": expiresAt.map { .string($0.rfc3339) } ?? .null, "observations": .int(observations),
            "subscriptions": .int(subscriptions), "queries": .int(queries), "lastEventId": .int(lastEventID),
            "backlog": .int(backlog),
            "dropped": .int(dropped), "lease": .int(lease), "retainObserved": .bool(retainObserved),
            "replay": .int(replay), "createdAt": .string(createdAt.rfc3339),
        ]
        return members.adding("client", client.map(JSON.string)).adding("tokenId", tokenID.map(JSON.string))
            .adding("delivery", deliverySummary)
    }

    /// A delivering observer's target without its secret, and the acknowledged cursor (section 16).
    var deliverySummary: JSON? {
        guard let delivery else { return nil }
        return [
            "url": .string(delivery.url), "maxBatch": .int(delivery.maxBatch), "timeout": .int(delivery.timeout),
            "acknowledged": .int(acknowledged), "backlog": .int(max(0, lastEventID - acknowledged)),
        ]
    }
}
