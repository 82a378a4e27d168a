// MARK: - Queries: register, remove, and their records (section 12)

extension StoreState {
    /// Observations, subscriptions and queries an observer holds (`--max-registrations-per-observer`).
    func registrationCount(of observerID: String) -> Int {
        registrations.count(of: observerID) + center.count(of: observerID) + queries.count(of: observerID)
    }

    /// Registers a query for an observer; the same definition and options again answer the
    /// existing one (`deduplicated`), changing nothing.
    mutating func registerQuery(
        observerID: String, definition: JSON, optionNames: [String], context: JSON?, throttle: Int, queryID: String,
        at time: Timestamp
    ) throws(CoreError) -> QueryResult {
        guard case .object(let members) = definition else {
            throw CoreError(.invalidRequest, "a query's definition is a JSON object")
        }
        let options = try ObservationOptions(names: optionNames)
        guard options.isSubset(of: [.initial, .new, .old]) else {
            throw CoreError(
                .invalidRequest, "a query takes the options initial, new and old",
                details: ["field": "options"])
        }
        try Self.checkThrottle(throttle, options: options)
        let observer = try observers.existing(observerID)
        let parsed = restricted(
            try QueryDefinition(members, checker: graph.checker) { graph.classes[$0] != nil }, to: observer.reader)
        if let existing = queries.registered(QueryTarget(parsed, options), by: observerID) {
            return QueryResult(query: querySnapshot(existing), deduplicated: true, revision: nil)
        }
        guard registrationCount(of: observerID) < limits.maxRegistrationsPerObserver else {
            throw CoreError(
                .limitExceeded,
                "observer \(observerID) may hold at most \(limits.maxRegistrationsPerObserver) registrations",
                details: ["limit": .int(limits.maxRegistrationsPerObserver)])
        }
        guard queries.count < limits.maxQueries else {
            throw CoreError(
                .limitExceeded, "the server holds its limit of \(limits.maxQueries) queries",
                details: ["limit": .int(limits.maxQueries)])
        }
        let revision = nextRevision()
        let id = Self.freshID(queryID) { queries[$0] != nil || registrations[$0] != nil }
        let shape = queries.shapeNumber(for: parsed, in: graph)
        var query = QueryRegistration(
            id: id, observerID: observerID, shape: shape, options: options, context: context, createdAt: time,
            sequence: registrations.nextSequence(), throttle: throttle)
        query.framing = QueryRegistration.framing(id: id, context: context)
        let evaluation = queries.shapes[shape]!
        if throttle > 0 {
            query.sent = .init(window: evaluation.window, total: evaluation.total, revision: revision)
        }
        queries.insert(query, definition: parsed)
        journal.mark(.query, id)
        let snapshot = querySnapshot(query)
        emitAdmin(
            "queryAdded",
            ["observer": .string(observerID), "query": .object(snapshot.json), "revision": .int(revision)])
        if options.contains(.initial) {
            let tail = QueryDiff.initial(evaluation.window, total: evaluation.total).encodedTail(
                revision: revision, options: options, select: parsed.select, initial: true, by: by)
            emit("query", query.record(tail: tail), to: observerID)
        }
        return QueryResult(query: snapshot, deduplicated: false, revision: revision)
    }

    /// Removes a query (`DELETE …/queries/{qid}`): a fence, as for observations.
    mutating func unregisterQuery(observerID: String, queryID: String) throws(CoreError) -> Int {
        _ = try observers.existing(observerID)
        guard let query = queries.existing(queryID, of: observerID) else { throw CoreError.notFound("query", queryID) }
        let revision = nextRevision()
        removeQuery(query, reason: "unobserved", revision: revision)
        return revision
    }

    /// Takes a query out of every index, with its `cancelled` event and the admin's `queryRemoved`.
    mutating func removeQuery(_ query: QueryRegistration, reason: String, revision: Int) {
        let className = queries.shape(of: query).definition.className
        queries.remove(query.id)
        throttled.cancel(query.id)
        journal.mark(.query, query.id)
        emitCancelled("query", query.id, reason: reason, revision: revision, to: query.observerID)
        emitAdmin(
            "queryRemoved",
            [
                "observer": .string(query.observerID), "query": .string(query.id),
                "class": className.map(JSON.string) ?? .null, "reason": .string(reason), "revision": .int(revision),
            ])
    }

    func querySnapshot(_ query: QueryRegistration, withWindow: Bool = false) -> QuerySnapshot {
        let shape = queries.shape(of: query)
        var snapshot = QuerySnapshot(
            id: query.id, observerID: query.observerID, definition: shape.definition.json, options: query.options,
            context: query.context, createdAt: query.createdAt, throttle: query.throttle)
        if withWindow {
            snapshot.ids = shape.window.map(\.id)
            snapshot.total = shape.total
        }
        return snapshot
    }

    /// `definition` as a reader with `filter` sees it (section 13).
    func restricted(_ definition: QueryDefinition, to filter: ReadFilter?) -> QueryDefinition {
        definition.restricted(to: filter, schema: definition.className.flatMap { graph.classes[$0]?.schema })
    }

    /// `POST /v1/query`: the window of `definition` now, read from the shape that evaluates it
    /// when a query does (unless `fresh`: the tests' oracle), else evaluated over the objects of
    /// its class; as `filter` lets its reader see it (section 13).
    func answerQuery(_ definition: JSON, filter: ReadFilter? = nil, fresh: Bool = false) throws(CoreError)
        -> QueryAnswer
    {
        guard case .object(let members) = definition else {
            throw CoreError(.invalidRequest, "a query's definition is a JSON object")
        }
        let parsed = restricted(
            try QueryDefinition(members, checker: graph.checker) { graph.classes[$0] != nil }, to: filter)
        var shape: QueryShape
        if !fresh, let existing = queries.shape(for: parsed) {
            shape = existing
        } else {
            shape = QueryShape(
                number: 0, definition: parsed, placement: QueryPlacement(parsed, schema: nil), direct: true)
            let ids =
                parsed.className.map { graph.objectIDsByClass[$0]?.page(after: nil, limit: .max).ids ?? [] }
                ?? graph.objectIDs.page(after: nil, limit: .max).ids
            shape.evaluateAll(ids, in: graph) { _, _ in }
        }
        let objects = shape.window.map { member in
            (member.id, JSONObject(zip(parsed.select.map(\.description), member.selected).map { ($0, $1) }))
        }
        return QueryAnswer(objects: objects, total: shape.total, revision: revision)
    }

    // MARK: Records

    /// What a write of `keys` (top-level) of an object changes for queries: those of them a
    /// query may read, with their values before the write. Nil when no query reads any (a
    /// write no query reads costs a look at two tables, none at all without queries: callers
    /// test `queries.isEmpty` first).
    func queryProbe(_ objectID: String, keys: [String]) -> QueryProbe? {
        guard let object = graph.objects[objectID] else { return nil }
        let read = keys.filter { queries.mayRead($0, of: objectID, className: object.className) }
        guard !read.isEmpty else { return nil }
        return QueryProbe(
            objectID: objectID, className: object.className, old: read.map { ($0, object.values[$0] ?? .null) })
    }

    /// Notes what a write changed for the queries; they are evaluated again once the revision
    /// is complete (`flushQueryChanges`), so that a revision that changes several objects (an
    /// observer's removal releasing what it retained) makes one record per query.
    mutating func noteQueryChanges(_ probe: QueryProbe) {
        guard let object = graph.objects[probe.objectID] else { return }
        for (key, old) in probe.old {
            queryChanges.append(
                QueryChange(
                    objectID: probe.objectID, className: probe.className, ownerToken: object.ownerToken, key: key,
                    values: object.values, old: old))
        }
    }

    /// `noteQueryChanges` for an object created (`values` now) or deleted (`values` before).
    mutating func noteQueryChanges(existenceOf object: StoredObject) {
        guard !queries.isEmpty else { return }
        queryChanges.append(
            QueryChange(
                objectID: object.id, className: object.className, ownerToken: object.ownerToken, key: nil,
                values: object.values, old: nil))
    }

    /// Evaluates again the members the revision's writes may have changed, then sends each
    /// affected query its record (after the revision's change records), in query creation order.
    mutating func flushQueryChanges() {
        let changes = queryChanges
        queryChanges = []
        let affected = queries.affected(by: changes, in: graph)
        guard !affected.isEmpty else { return }
        let before = RevisionBefore(changes, in: graph)
        var diffs: [(shape: Int, diff: QueryDiff)] = []
        for (number, subjects) in affected {
            if let diff = queries.refresh(number, subjects: subjects, before: before, in: graph) {
                diffs.append((number, diff))
            }
        }
        sendRecords(diffs, revision: revision)
    }

    /// A class was replaced: the queries that may read its objects are evaluated again.
    mutating func reevaluateQueries(ofClass name: String, revision: Int) {
        guard !queries.isEmpty else { return }
        sendRecords(queries.reevaluate(ofClass: name, in: graph), revision: revision)
    }

    /// Each query of the changed shapes gets its record, in query creation order.
    private mutating func sendRecords(_ diffs: [(shape: Int, diff: QueryDiff)], revision: Int) {
        var changed: [(QueryRegistration, QueryDiff, QueryDefinition)] = []
        for (number, diff) in diffs {
            guard let shape = queries.shapes[number] else { continue }
            for id in shape.queries { if let query = queries[id] { changed.append((query, diff, shape.definition)) } }
        }
        changed.sort { $0.0.sequence < $1.0.sequence }
        var tails: [ObservationOptions: [UInt8]] = [:]
        var lastShape = -1
        for (query, diff, definition) in changed {
            guard query.throttle == 0 else {
                throttleQuery(query.id, revision: revision)
                continue
            }
            if query.shape != lastShape {
                tails = [:]
                lastShape = query.shape
            }
            let key = query.options.intersection([.old, .new])
            let tail =
                tails[key]
                ?? diff.encodedTail(revision: revision, options: key, select: definition.select, by: by, tx: tx)
            tails[key] = tail
            emit("query", query.record(tail: tail), to: query.observerID)
        }
    }

    /// A change reached a throttled query: its record goes out now when its window is closed
    /// (and opens one), else it is folded into the record sent when the window ends.
    private mutating func throttleQuery(_ id: String, revision: Int) {
        let now = clock
        journal.mark(.query, id)
        let folding: Timestamp? =
            queries.update(id) { query in
                guard let end = query.windowEnd, now < end else { return nil }
                query.foldedRevision = revision
                return end
            } ?? nil
        if let end = folding {
            throttled.schedule(id, at: end.milliseconds)
            effects.timerMustLook = true
            return
        }
        sendThrottled(id, revision: revision, at: now)
    }

    /// Sends a throttled query the difference between what it last sent and its window now
    /// (none when they are the same); a record opens a new window, none closes it.
    mutating func sendThrottled(_ id: String, revision: Int, at now: Timestamp) {
        guard let query = queries[id] else { return }
        let shape = queries.shape(of: query)
        let sent = query.sent ?? .init(window: [], total: 0, revision: 0)
        let diff = QueryDiff.between(sent.window, shape.window, total: shape.total)
        let quiet = diff.isEmpty && sent.total == shape.total
        queries.update(id) { query in
            query.foldedRevision = nil
            query.windowEnd = quiet ? nil : Timestamp(milliseconds: now.milliseconds + Int64(query.throttle))
            if !quiet { query.sent = .init(window: shape.window, total: shape.total, revision: revision) }
        }
        throttled.cancel(id)
        journal.mark(.query, id)
        guard !quiet else { return }
        let tail = diff.encodedTail(revision: revision, options: query.options, select: shape.definition.select)
        emit("query", query.record(tail: tail), to: query.observerID, revision: revision)
    }

    /// The record a query sends in a rebuild after `reset`: every member of its window as
    /// `initial` (a throttled query: the window it last sent, at that revision).
    func rebuildRecord(_ query: QueryRegistration) -> [UInt8] {
        let shape = queries.shape(of: query)
        let (window, total, at) =
            query.sent.map { ($0.window, $0.total, $0.revision) } ?? (shape.window, shape.total, revision)
        let tail = QueryDiff.initial(window, total: total).encodedTail(
            revision: at, options: query.options, select: shape.definition.select, initial: true)
        return query.record(tail: tail)
    }
}

/// A write's keys with their values before it (see `StoreState.queryProbe`).
struct QueryProbe {
    let objectID: String
    let className: String?
    let old: [(key: String, value: JSON)]
}

// MARK: - Scopes that changed

extension StoreState {
    /// Moves a query to the evaluation its observer's new reader sees (its token's scopes
    /// changed), with one record of the difference between the windows.
    mutating func refilterQuery(_ query: QueryRegistration, reader: ReadFilter?) {
        let old = queries.shape(of: query)
        let definition = restricted(old.definition, to: reader)
        guard definition.canonical != old.definition.canonical else { return }
        queries.remove(query.id)
        var moved = query
        moved.shape = queries.shapeNumber(for: definition, in: graph)
        queries.insert(moved, definition: definition)
        journal.mark(.query, query.id)
        guard let shape = queries.shapes[moved.shape] else { return }
        let diff = QueryDiff.between(old.window, shape.window, total: shape.total)
        guard !diff.isEmpty || shape.total != old.total else { return }
        let tail = diff.encodedTail(
            revision: revision, options: moved.options.intersection([.old, .new]), select: definition.select, by: by,
            tx: tx)
        emit("query", moved.record(tail: tail), to: moved.observerID)
    }
}
