// MARK: - Persistence: commits and checkpoints, rebuilding from a checkpoint and its commands

extension StoreState {
    /// Takes the commands applied since the last batch; with `checkpoint`, also copies of
    /// every entity changed since the last checkpoint, as they are now.
    mutating func takeBatch(checkpoint: Bool) -> JournalBatch {
        let (commands, logs) = journal.takeCommands()
        guard checkpoint else {
            return JournalBatch(
                commands: commands, checkpoint: nil, sequence: journal.sequence, logs: logs, revision: revision)
        }
        var entities: [(kind: EntityKind, id: String, entity: JournalBatch.Entity?)] = []
        let changed = journal.takeChanged()
        for kind in EntityKind.allCases {
            for id in (changed[kind] ?? []).sorted() { entities.append((kind, id, entity(kind, id))) }
        }
        let snapshot = JournalBatch.Checkpoint(
            entities: entities, position: journal.sequence, revision: revision, adminLastEventID: adminLastEventID,
            clock: clock.milliseconds)
        return JournalBatch(
            commands: [], checkpoint: snapshot, sequence: journal.sequence, logs: logs, revision: revision)
    }

    /// Every entity, as it is now, and the counters a replica needs to continue exactly (a
    /// cluster checkpoint at log position `position`). Kinds in order, ids sorted.
    func fullCheckpoint(position: Int) -> JournalBatch.Checkpoint {
        var entities: [(kind: EntityKind, id: String, entity: JournalBatch.Entity?)] = []
        let observerIDs = observers.ids
        let ids: [EntityKind: [String]] = [
            .class: graph.classes.keys.sorted(), .object: graph.objects.keys.sorted(), .observer: observerIDs,
            .registration: registrations.ids, .subscription: center.ids, .lastEventID: observerIDs,
            .queue: center.queue.entries.isEmpty ? [] : ["queue"], .idempotency: idempotency.keys,
            .query: queries.ids, .token: tokens.ids,
        ]
        for kind in EntityKind.allCases {
            for id in ids[kind] ?? [] { entities.append((kind, id, entity(kind, id))) }
        }
        var checkpoint = JournalBatch.Checkpoint(
            entities: entities, position: position, revision: revision, adminLastEventID: adminLastEventID,
            clock: clock.milliseconds)
        let admin = observers.adminHolderCounts.sorted { $0.key < $1.key }.map { ($0.key, JSON.int($0.value)) }
        checkpoint.counters = [
            "registrationSequence": .int(registrations.sequence), "subscriptionSequence": .int(center.sequence),
            "adminHolders": .object(JSONObject(admin)),
        ]
        return checkpoint
    }

    private func entity(_ kind: EntityKind, _ id: String) -> JournalBatch.Entity? {
        switch kind {
        case .class: graph.classes[id].map { .class($0) }
        case .object: graph.objects[id].map { .object($0, pendingRelease: graph.pendingRelease.contains(id)) }
        case .observer: observers[id].map { .observer($0) }
        case .registration: registrations[id].map { .registration($0) }
        case .subscription: center[id].map { .subscription($0) }
        case .lastEventID:
            observers[id].map {
                .lastEventID($0.lastEventID, pending: $0.delivery == nil ? [] : $0.log.held(after: $0.acknowledged))
            }
        case .queue: .queue(center.queue)
        case .idempotency: idempotency.entries[id].map { .idempotency($0) }
        case .query: queries[id].map { .query($0, definition: queries.shape(of: $0).definition.json) }
        case .token:
            if let token = tokens[id] {
                .token(token)
            } else {
                tokens.ended[id].map { .endedToken($0, forgetAt: tokens.forgetAt(id) ?? 0) }
            }
        }
    }

    /// Rebuilds the state of a checkpoint from its rows (into an empty state); registrations
    /// are bound to the values as stored.
    mutating func restore(_ image: PersistedImage) throws(PersistenceError) {
        let time = Timestamp(milliseconds: image.clock)
        var byKind: [EntityKind: [StoredDocument]] = [:]
        for row in image.rows { byKind[row.kind, default: []].append(try StoredDocument(row)) }
        for document in byKind[.class] ?? [] { try restoreClass(document) }
        for document in byKind[.object] ?? [] { try restoreObject(document) }
        for document in byKind[.token] ?? [] { try restoreToken(document) }
        for document in byKind[.observer] ?? [] {
            try restoreObserver(document, at: time)
            if image.exact { try restoreStreams(document) }
        }
        for document in byKind[.lastEventID] ?? [] { try restoreLastEventID(document) }
        var registrationRows: [(Int, StoredDocument)] = []
        for document in byKind[.registration] ?? [] {
            registrationRows.append((try document.int("sequence"), document))
        }
        for (sequence, document) in registrationRows.sorted(by: { $0.0 < $1.0 }) {
            try restoreRegistration(document, sequence: sequence)
        }
        for document in byKind[.subscription] ?? [] { try restoreSubscription(document) }
        var queryRows: [(Int, StoredDocument)] = []
        for document in byKind[.query] ?? [] { queryRows.append((try document.int("sequence"), document)) }
        for (_, document) in queryRows.sorted(by: { $0.0 < $1.0 }) { try restoreQuery(document) }
        for document in byKind[.queue] ?? [] { try restoreQueue(document) }
        try restoreIdempotency(byKind[.idempotency] ?? [])
        if image.exact { try restoreCounters(image.counters) }
        revision = image.revision
        adminLastEventID = image.adminLastEventID
        adminLog.continueAfter(image.adminLastEventID)
        clock = time
        journal = Journal(enabled: journal.enabled, after: image.checkpoint)
    }

    /// Applies the commands stored after the checkpoint again, in order, with the count limits
    /// lifted: each succeeded when it was first applied, and a limit lowered since must not
    /// refuse what was acknowledged. Their events refill the replay buffers; they are durable,
    /// so they show at once. Returns the effects to perform (their events, into the logs).
    mutating func replay(_ commands: [(position: Int, bytes: [UInt8])]) throws(PersistenceError) -> [Effects] {
        let configured = limits
        limits = .unlimited(keeping: configured)
        replaying = true
        defer {
            limits = configured
            replaying = false
        }
        var performed: [Effects] = []
        for (position, bytes) in commands {
            let command: Command
            do {
                command = try Command(decoding: bytes)
            } catch {
                throw PersistenceError(kind: .queue, id: "command \(position)", reason: error.description)
            }
            let result = apply(command)
            let effects = effects
            self.effects = Effects()
            if case .failure(let error) = result {
                throw PersistenceError(
                    kind: .queue, id: "command \(position)", reason: "no longer applies: \(error.message)")
            }
            _ = journal.record(bytes)
            // At its stored position: a rollback leaves gaps, and positions never go back.
            journal.recorded(at: position)
            performed.append(effects)
        }
        journal.settleReplayed()
        return performed
    }

    private mutating func restoreClass(_ document: StoredDocument) throws(PersistenceError) {
        let definition = try document.object("definition")
        let schema = try document.checked { () throws(CoreError) in
            try ClassSchema(name: document.row.id, definition: .object(definition))
        }
        graph.classes[schema.name] = ObjectGraph.ClassRecord(schema: schema, revision: try document.int("revision"))
    }

    private mutating func restoreObject(_ document: StoredDocument) throws(PersistenceError) {
        let id = document.row.id
        let className = try document.optionalString("class")
        if let className, graph.classes[className] == nil {
            throw document.failure("its class \(className) is not stored")
        }
        var object = StoredObject(
            id: id, className: className, revision: try document.int("revision"),
            createdAt: try document.timestamp("createdAt"), values: try document.object("values"))
        // Data directories from before owners (section 14) have neither field.
        if document.members["owner"] != nil { object.owner = try document.optionalString("owner") }
        if document.members["ownerToken"] != nil { object.ownerToken = try document.optionalString("ownerToken") }
        graph.insert(object)
        if try document.bool("pendingRelease") { graph.pendingRelease.insert(id) }
    }

    private mutating func restoreObserver(_ document: StoredDocument, at time: Timestamp) throws(PersistenceError) {
        let id = document.row.id
        // Data directories from before token hashing hold the token itself.
        let tokenHash =
            document.members["tokenHash"] != nil
            ? try document.string("tokenHash") : TokenHash.of(try document.string("token"))
        let lastEventID = try document.int("lastEventId")
        let replay = try document.int("replay")
        var record = ObserverRecord(
            id: id, name: try document.string("name"), tokenHash: tokenHash, lease: try document.int("lease"),
            retainObserved: try document.bool("retainObserved"),
            client: document.members["client"] == nil ? nil : try document.optionalString("client"),
            createdAt: try document.timestamp("createdAt"),
            log: reusableLog(id)
                ?? EventLog(
                    label: id, capacity: replay, maxBytes: limits.maxReplayBytes,
                    lastID: lastEventID, gated: journal.enabled),
            lastEventID: lastEventID)
        // Data directories from before scoped tokens have no `access`.
        if let stored = document.members["access"], stored != .null {
            guard var access = Access(json: stored) else { throw document.failure("unreadable access") }
            // A stored token's observers read with its scopes as they are now.
            if access.kind == .token, let token = tokens[access.tokenID] {
                access = access.with(grant: token.access.grant)
            }
            record.access = access
        }
        record.onRemove = try Self.removalPatches(document)
        if let deliver = document.members["deliver"] {
            do {
                record.delivery = try DeliveryTarget(json: deliver)
            } catch {
                throw document.failure("an unreadable deliver: \(error.message)")
            }
            record.acknowledged = try document.int("acknowledged")
        }
        observers.insert(record, at: time)
    }

    /// The streams cluster nodes hold and the exact lease deadline (exact checkpoints).
    private mutating func restoreStreams(_ document: StoredDocument) throws(PersistenceError) {
        guard case .object(let members) = try document.value("holders") else { throw document.failure("no holders") }
        var holders: [String: Int] = [:]
        for (holder, count) in members {
            guard case .int(let count) = count else { throw document.failure("a holder's count is not a number") }
            holders[holder] = count
        }
        let expiresAt: Timestamp? =
            if case .int(let milliseconds) = try document.value("expiresAt") {
                Timestamp(milliseconds: Int64(milliseconds))
            } else { nil }
        observers.restoreStreams(of: document.row.id, holders: holders, expiresAt: expiresAt)
    }

    /// Creation sequences and admin streams (exact checkpoints): new registrations and
    /// subscriptions take the numbers the other replicas give them.
    private mutating func restoreCounters(_ counters: JSONObject) throws(PersistenceError) {
        guard case .int(let registrationSequence)? = counters["registrationSequence"],
            case .int(let subscriptionSequence)? = counters["subscriptionSequence"],
            case .object(let admin)? = counters["adminHolders"]
        else { throw PersistenceError(kind: .queue, id: "counters", reason: "the checkpoint's counters are missing") }
        registrations.continueSequence(after: registrationSequence)
        center.continueSequence(after: subscriptionSequence)
        var holders: [String: Int] = [:]
        for (holder, count) in admin { if case .int(let count) = count { holders[holder] = count } }
        observers.restoreAdminHolders(holders)
    }

    /// An observer's ids continue after the last one stored (its document may hold an older one).
    private mutating func restoreLastEventID(_ document: StoredDocument) throws(PersistenceError) {
        let id = document.row.id
        guard observers[id] != nil else { throw document.failure("its observer \(id) is not stored") }
        let lastID = try document.int("lastEventId")
        // A delivering observer's unacknowledged events, when the checkpoint has every one up to its last id.
        if let pending = try Self.pendingEvents(document), pending.last?.id == lastID, let log = observers[id]?.log {
            log.restore(pending)
        }
        observers.continueEvents(of: id, after: lastID)
    }

    private mutating func restoreRegistration(_ document: StoredDocument, sequence: Int) throws(PersistenceError) {
        let observerID = try document.string("observer")
        let objectID = try document.string("object")
        guard observers[observerID] != nil else { throw document.failure("its observer \(observerID) is not stored") }
        guard graph.objects[objectID] != nil else { throw document.failure("its object \(objectID) is not stored") }
        let keyPath = try document.string("keyPath")
        let path = try document.checked { () throws(CoreError) in try KeyPath(keyPath) }
        let names = try document.strings("options")
        let options = try document.checked { () throws(CoreError) in try ObservationOptions(names: names) }
        // A context of `null` given as such is kept apart from none (`contextGiven`); documents
        // written before that distinction read `null` as none.
        let context = try document.value("context")
        let given = document.members["contextGiven"].map { $0 == .bool(true) } ?? !context.isNull
        // Spelled out: `given ? context : nil` is a JSON (`nil` is the JSON literal null), so a
        // registration without a context came back with `null` as its context.
        let restoredContext: JSON? = given ? .some(context) : .none
        var registration = bind(
            Registration(
                id: document.row.id, observerID: observerID, objectID: objectID, keyPath: path, options: options,
                context: restoredContext, createdAt: try document.timestamp("createdAt"),
                sequence: sequence, derivedPolicy: nil, value: .null, notifiedValue: .null, dependencies: [],
                location: nil))
        // The value at its last notification (`manual` keys); older documents: the value now.
        if let notified = document.members["notified"] { registration.notifiedValue = notified }
        try restoreThrottle(&registration, document)
        registrations.insert(registration)
        registrations.continueSequence(after: sequence)
    }

    /// A throttled registration's window and folded changes (documents from before throttling: none).
    private mutating func restoreThrottle(_ registration: inout Registration, _ document: StoredDocument)
        throws(PersistenceError)
    {
        guard document.members["throttle"] != nil else { return }
        registration.throttle = try document.int("throttle")
        if case .int(let end) = try document.value("windowEnd") {
            registration.windowEnd = Timestamp(milliseconds: Int64(end))
        }
        guard case .object(let folded) = try document.value("folded") else { return }
        guard let old = folded["old"], case .int(let revision)? = folded["revision"], let end = registration.windowEnd
        else { throw document.failure("its folded change is unreadable") }
        let by: String? = if case .string(let name)? = folded["by"] { name } else { nil }
        registration.folded = FoldedChange(old: old, revision: revision, by: by)
        throttled.schedule(registration.id, at: end.milliseconds)
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
        center.insert(subscription)
        center.continueSequence(after: sequence)
    }

    /// Idempotency keys, in the order they came (so that they leave in the same order everywhere).
    private mutating func restoreIdempotency(_ documents: [StoredDocument]) throws(PersistenceError) {
        var entries: [(key: String, entry: IdempotencyTable.Entry)] = []
        for document in documents {
            guard case .array(let headerPairs) = try document.value("headers") else {
                throw document.failure("'headers' is not an array")
            }
            var headers: [StoredAnswer.Header] = []
            for pair in headerPairs {
                guard case .array(let parts) = pair, parts.count == 2, case .string(let name) = parts[0],
                    case .string(let value) = parts[1]
                else { throw document.failure("a header is not a [name, value] pair") }
                headers.append(StoredAnswer.Header(name: name, value: value))
            }
            let answer = StoredAnswer(
                status: try document.int("status"), contentType: try document.string("contentType"), headers: headers,
                body: Array(try document.string("body").utf8))
            entries.append(
                (
                    document.row.id,
                    IdempotencyTable.Entry(
                        fingerprint: try document.string("fingerprint"), expires: Int64(try document.int("expires")),
                        answer: answer, sequence: try document.int("sequence"))
                ))
        }
        entries.sort { $0.entry.sequence < $1.entry.sequence }
        for (key, entry) in entries { idempotency.restore(key, entry) }
    }

    private mutating func restoreQueue(_ document: StoredDocument) throws(PersistenceError) {
        guard case .array(let entries) = try document.value("entries") else { throw document.failure("no entries") }
        for entry in entries {
            guard case .object(let members) = entry, case .string(let name)? = members["name"],
                case .string(let styleName)? = members["style"],
                let style = NotificationQueue.Style(rawValue: styleName),
                case .int(let queuedAt)? = members["enqueuedAt"]
            else { throw document.failure("an entry is unreadable: \(entry)") }
            let object: String? = if case .string(let id)? = members["object"] { id } else { nil }
            let userInfo = members["userInfo"]
            let by: String? = if case .string(let name)? = members["by"] { name } else { nil }
            _ = try document.checked { () throws(CoreError) in
                try center.queue.enqueue(
                    NotificationQueue.Entry(
                        name: name, object: object, userInfo: userInfo, style: style,
                        enqueuedAt: Timestamp(milliseconds: Int64(queuedAt)), by: by),
                    coalescing: [])
            }
        }
    }
}

extension StoreState {
    /// A query, its shape evaluated again over the restored objects; a throttled query keeps
    /// what it last sent and its open window.
    fileprivate mutating func restoreQuery(_ document: StoredDocument) throws(PersistenceError) {
        let observerID = try document.string("observer")
        guard observers[observerID] != nil else { throw document.failure("its observer \(observerID) is not stored") }
        let members = try document.object("definition")
        let parsed = try document.checked { () throws(CoreError) in
            try QueryDefinition(members, checker: graph.checker, stored: true) { graph.classes[$0] != nil }
        }
        let definition = restricted(parsed, to: observers[observerID]?.reader)
        let names = try document.strings("options")
        let options = try document.checked { () throws(CoreError) in try ObservationOptions(names: names) }
        let context = try document.value("context")
        let restoredContext: JSON? = try document.bool("contextGiven") ? .some(context) : .none
        let sequence = try document.int("sequence")
        var query = QueryRegistration(
            id: document.row.id, observerID: observerID, shape: queries.shapeNumber(for: definition, in: graph),
            options: options, context: restoredContext, createdAt: try document.timestamp("createdAt"),
            sequence: sequence, throttle: try document.int("throttle"))
        query.framing = QueryRegistration.framing(id: query.id, context: restoredContext)
        if case .int(let end) = try document.value("windowEnd") {
            query.windowEnd = Timestamp(milliseconds: Int64(end))
        }
        if case .int(let folded) = try document.value("foldedRevision") { query.foldedRevision = folded }
        if case .object(let sent) = try document.value("sent") {
            guard case .int(let revision)? = sent["revision"], case .int(let total)? = sent["total"],
                case .array(let entries)? = sent["window"]
            else { throw document.failure("its last sent window is unreadable") }
            var window: [WindowMember] = []
            for entry in entries {
                guard case .array(let pair) = entry, pair.count == 2, case .string(let id) = pair[0],
                    case .array(let selected) = pair[1]
                else { throw document.failure("its last sent window is unreadable") }
                // Its place in the order is not kept: a difference needs ids and values only.
                window.append(WindowMember(key: MemberKey(values: [], id: id), selected: selected))
            }
            query.sent = .init(window: window, total: total, revision: revision)
        }
        if query.foldedRevision != nil, let end = query.windowEnd { throttled.schedule(query.id, at: end.milliseconds) }
        queries.insert(query, definition: definition)
        registrations.continueSequence(after: sequence)
    }
}
