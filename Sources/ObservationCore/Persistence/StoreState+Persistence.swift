// MARK: - Persistence: taking the journal, rebuilding from stored rows

extension StoreState {
    /// Takes what changed since the last batch, with copies of the entities as they are now.
    mutating func takeJournalBatch() -> JournalBatch {
        let (changed, logs) = journal.take()
        var entities: [(kind: EntityKind, id: String, entity: JournalBatch.Entity?)] = []
        for (kind, ids) in changed {
            for id in ids { entities.append((kind, id, entity(kind, id))) }
        }
        return JournalBatch(
            sequence: journal.sequence, revision: revision, entities: entities, adminLog: adminLog,
            logs: logs.map { ($0, $0.lastID) })
    }

    private mutating func entity(_ kind: EntityKind, _ id: String) -> JournalBatch.Entity? {
        switch kind {
        case .class: classes[id].map { .class($0) }
        case .object: objects[id].map { .object($0, pendingRelease: pendingRelease.contains(id)) }
        case .observer: observers[id].map { .observer($0) }
        case .registration: registrations[id].map { .registration($0) }
        case .subscription: subscriptions[id].map { .subscription($0) }
        case .lastEventID: observers.inPlace(id) { .lastEventID($0.log.lastID) }
        }
    }

    /// Rebuilds the state from stored rows (into an empty state). Leases start counting
    /// at `now`; registrations are bound to the values as stored.
    mutating func restore(_ image: PersistedImage, at now: Moment) throws(PersistenceError) {
        var byKind: [EntityKind: [StoredDocument]] = [:]
        for row in image.rows { byKind[row.kind, default: []].append(try StoredDocument(row)) }
        for document in byKind[.class] ?? [] { try restoreClass(document) }
        for document in byKind[.object] ?? [] { try restoreObject(document) }
        for document in byKind[.observer] ?? [] { try restoreObserver(document, at: now) }
        for document in byKind[.lastEventID] ?? [] { try restoreLastEventID(document) }
        var registrationRows: [(Int, StoredDocument)] = []
        for document in byKind[.registration] ?? [] {
            registrationRows.append((try document.int("sequence"), document))
        }
        for (sequence, document) in registrationRows.sorted(by: { $0.0 < $1.0 }) {
            try restoreRegistration(document, sequence: sequence)
        }
        for document in byKind[.subscription] ?? [] { try restoreSubscription(document) }
        revision = image.revision
        adminLog.continueAfter(image.adminLastEventID)
        _ = journal.take()  // what was just read is what is stored
    }

    private mutating func restoreClass(_ document: StoredDocument) throws(PersistenceError) {
        let definition = try document.object("definition")
        let schema = try document.checked { () throws(CoreError) in
            try ClassSchema(name: document.row.id, definition: .object(definition))
        }
        classes[schema.name] = ClassRecord(schema: schema, revision: try document.int("revision"))
    }

    private mutating func restoreObject(_ document: StoredDocument) throws(PersistenceError) {
        let id = document.row.id
        let className = try document.optionalString("class")
        if let className, classes[className] == nil { throw document.failure("its class \(className) is not stored") }
        objects[id] = StoredObject(
            id: id, className: className, revision: try document.int("revision"),
            createdAt: try document.timestamp("createdAt"), values: try document.object("values"))
        objectIDs.insert(id)
        if let className { objectIDsByClass[className, default: SortedIDs()].insert(id) }
        if try document.bool("pendingRelease") { pendingRelease.insert(id) }
    }

    private mutating func restoreObserver(_ document: StoredDocument, at now: Moment) throws(PersistenceError) {
        let id = document.row.id
        let lease = try document.int("lease")
        let deadline = now.instant + .seconds(lease)
        let record = ObserverRecord(
            id: id, name: try document.string("name"), token: try document.string("token"), lease: lease,
            retainObserved: try document.bool("retainObserved"), createdAt: try document.timestamp("createdAt"),
            log: EventLog(
                capacity: try document.int("replay"), maxBytes: limits.maxReplayBytes,
                lastID: try document.int("lastEventId"), gated: true),
            expiresAt: deadline)
        observers[id] = record
        observersByToken[record.token] = id
        leaseDeadlines.schedule(id, at: deadline)
    }

    /// An observer's ids continue after the last one stored (its document may hold an older one).
    private mutating func restoreLastEventID(_ document: StoredDocument) throws(PersistenceError) {
        let id = document.row.id
        guard let log = observers[id]?.log else { throw document.failure("its observer \(id) is not stored") }
        let lastID = try document.int("lastEventId")
        if lastID > log.lastID { log.continueAfter(lastID) }
    }

    private mutating func restoreRegistration(_ document: StoredDocument, sequence: Int) throws(PersistenceError) {
        let observerID = try document.string("observer")
        let objectID = try document.string("object")
        guard observers[observerID] != nil else { throw document.failure("its observer \(observerID) is not stored") }
        guard objects[objectID] != nil else { throw document.failure("its object \(objectID) is not stored") }
        let keyPath = try document.string("keyPath")
        let path = try document.checked { () throws(CoreError) in try KeyPath(keyPath) }
        let names = try document.strings("options")
        let options = try document.checked { () throws(CoreError) in try ObservationOptions(names: names) }
        let context = try document.value("context")
        _ = insertRegistration(
            Registration(
                id: document.row.id, observerID: observerID, objectID: objectID, keyPath: path, options: options,
                context: context.isNull ? nil : context, createdAt: try document.timestamp("createdAt"),
                sequence: sequence, derivedPolicy: nil, value: .null, notifiedValue: .null, dependencies: [],
                location: nil))
        registrationSequence = max(registrationSequence, sequence)
    }

    private mutating func restoreSubscription(_ document: StoredDocument) throws(PersistenceError) {
        let observerID = try document.string("observer")
        guard observers[observerID] != nil else { throw document.failure("its observer \(observerID) is not stored") }
        let sequence = try document.int("sequence")
        let subscription = Subscription(
            id: document.row.id, observerID: observerID,
            target: SubscriptionTarget(
                name: try document.optionalString("name"), object: try document.optionalString("object")),
            createdAt: try document.timestamp("createdAt"), sequence: sequence)
        subscriptions[subscription.id] = subscription
        subscriptionIndex.insert(subscription.id, subscription.target)
        observers[observerID]?.subscriptionsByTarget[subscription.target] = subscription.id
        registrationSequence = max(registrationSequence, sequence)
    }
}
