// MARK: - The propagator: from a change to change records

/// A to-many mutation, for the registrations that observe the mutated array itself.
struct ToManyChange {
    let location: ObjectPath
    let mutation: ArrayMutation
    let before: [JSON]
    let after: [JSON]
}

extension StoreState {
    /// The place a write of `value` at `target` changes, with the policy of the key set there.
    /// `position`: where the target's object is, when the caller knows.
    mutating func write(at target: WriteTarget, storing value: JSON, position: ObjectPosition? = nil) -> Write {
        let location = ObjectPath(objectID: target.objectID, keys: target.keys)
        let topLevelKey = target.inner.first ?? target.key
        let className: String?
        if let position {
            className = graph.header(at: position).className
        } else {
            className = graph.objects[target.objectID]?.className
        }
        let policy = graph.schema(ofClass: className)?.properties[topLevelKey]?.notify ?? .always
        return Write(location: location, policy: policy, stored: value)
    }

    /// Re-evaluates every registration the writes affect (after they were applied), re-binds
    /// its dependencies, and emits its records: every prior record first, then every post
    /// record (section 6.2), in registration creation order. Registrations on the same object
    /// and key path share one evaluation (the graph does not change while they are visited).
    mutating func propagate(_ writes: [Write], revision: Int, toMany: ToManyChange? = nil) {
        emitRecords(registrations.affected(by: writes), after: writes, revision: revision, toMany: toMany)
    }

    /// `propagate` of writes to one object whose dependents the caller looked up already.
    mutating func propagate(_ writes: [Write], revision: Int, among known: RegistrationIndex.ObjectDependents) {
        emitRecords(registrations.affected(by: writes, among: known), after: writes, revision: revision, toMany: nil)
    }

    private mutating func emitRecords(
        _ affected: [(sequence: Int, position: RegistrationIndex.Position, policy: NotifyPolicy)],
        after writes: [Write], revision: Int, toMany: ToManyChange?
    ) {
        guard !affected.isEmpty else { return }
        var batch = spareBatch.take() ?? RecordBatch(sharesTails: false, tx: nil)
        batch.reuse(sharesTails: affected.count > 1, tx: tx)
        collectRecords(affected, after: writes, revision: revision, into: &batch) { _ in toMany }
        emitBatch(batch)
        if batch.emptyForReuse() { spareBatch = consume batch }
    }

    /// The records of the `affected` registrations for the writes (already applied), into
    /// `batch`; `toMany(i)`: the to-many change `affected[i]` sees, if any.
    mutating func collectRecords(
        _ affected: [(sequence: Int, position: RegistrationIndex.Position, policy: NotifyPolicy)],
        after writes: [Write], revision: Int, into batch: inout RecordBatch, toMany: (Int) -> ToManyChange?
    ) {
        var evaluations = EvaluationCache(enabled: affected.count > 1)
        var windows = ThrottleWindows()
        let graph = self.graph  // read while the registrations change in place
        let (by, now) = (self.by, clock)
        for (index, (_, position, policy)) in affected.enumerated() {
            let change = toMany(index)
            registrations.update(at: position) { registration, dependents in
                let old = registration.value
                let new = Self.reevaluate(
                    &registration, in: graph, after: writes, dependents: &dependents, sharing: &evaluations)
                let governing = registration.derivedPolicy ?? policy
                guard governing == .always || (governing == .onChange && old != new) else { return }
                Self.addRecords(
                    &registration, old: old, new: new, revision: revision, toMany: change, by: by, at: now,
                    to: &batch, windows: &windows)
            }
        }
        record(windows)
    }

    /// Sends the folded record of every throttled registration whose window ended by `time`
    /// (none when its value ended where it started, or when all of it was the observer's own
    /// echo), in deadline order; each record sent opens a new window. Returns how many went out.
    mutating func flushThrottled(at time: Timestamp) -> Int {
        var sent = 0
        while let next = throttled.first, next.deadline <= time.milliseconds {
            _ = throttled.popFirst()
            if let folded = queries[next.id]?.foldedRevision {
                sendThrottled(next.id, revision: folded, at: time)
                sent += 1
                continue
            }
            let record = registrations.update(next.id) { registration, _ -> (String, [UInt8], Int)? in
                guard let folded = registration.folded else { return nil }
                registration.folded = nil
                let own = registration.skipsClient != nil && registration.skipsClient == folded.by
                guard folded.old != registration.value, !own else {
                    registration.windowEnd = nil  // nothing sent: the window is quiet again
                    if own { registration.notifiedValue = registration.value }
                    return nil
                }
                registration.windowEnd = Timestamp(milliseconds: time.milliseconds + Int64(registration.throttle))
                registration.notifiedValue = registration.value
                var record = ChangeRecord(revision: folded.revision)
                // Not `options.contains(.old) ? folded.old : nil`: JSON is `nil`-literal-expressible,
                // so that reads as `null`, and a record would carry a field it was not asked for.
                if registration.options.contains(.old) { record.old = folded.old }
                if registration.options.contains(.new) { record.new = registration.value }
                record.by = folded.by
                let bytes = ChangeRecord.encode(registration, record: record)
                return (registration.observerID, bytes, folded.revision)
            }
            journal.mark(.registration, next.id)
            guard let (observerID, bytes, revision) = record ?? nil else { continue }
            // The revision of the latest change it holds: the one exception to revision order.
            emit("change", bytes, to: observerID, revision: revision)
            sent += 1
        }
        return sent
    }

    /// `didChangeValueForKey:` for the registrations of `id` on `keyPaths`: one record each, with
    /// `old` = the value at its last notification and `new` = the value now (a throttled
    /// registration's record waits for its window like any other).
    mutating func notifyManually(_ id: String, keyPaths: [KeyPath], revision: Int) {
        var batch = RecordBatch(sharesTails: true, tx: tx)
        collectManualRecords(id, keyPaths: keyPaths, revision: revision, into: &batch)
        emitBatch(batch)
    }

    /// The registrations of `id` on `keyPaths` (creation order), but those in `skipping` (by sequence).
    func manuallyNotified(_ id: String, keyPaths: [KeyPath], skipping: Set<Int> = []) -> [Registration] {
        let wanted = Set(keyPaths.map(\.description))
        return registrations.observing(id).filter {
            wanted.contains($0.keyPath.description) && !skipping.contains($0.sequence)
        }
    }

    /// `notifyManually`'s records into `batch`, but for the registrations in `skipping` (by sequence).
    mutating func collectManualRecords(
        _ id: String, keyPaths: [KeyPath], revision: Int, skipping: Set<Int> = [], into batch: inout RecordBatch
    ) {
        var evaluations = EvaluationCache(enabled: false)
        var windows = ThrottleWindows()
        let graph = self.graph
        let (by, now) = (self.by, clock)
        for chosen in manuallyNotified(id, keyPaths: keyPaths, skipping: skipping) {
            registrations.update(chosen.id) { registration, dependents in
                let old = registration.notifiedValue
                let new = Self.reevaluate(
                    &registration, in: graph, after: [], dependents: &dependents, sharing: &evaluations)
                Self.addRecords(
                    &registration, old: old, new: new, revision: revision, toMany: nil, by: by, at: now,
                    to: &batch, windows: &windows)
            }
        }
        record(windows)
    }

    /// The records a due change from `old` to `new` makes for `registration`: at once, or, when
    /// it is throttled, as its window decides (folded changes go out with the first record after
    /// the window, as one).
    private static func addRecords(
        _ registration: inout Registration, old: JSON, new: JSON, revision: Int, toMany: ToManyChange?, by: String?,
        at now: Timestamp, to batch: inout RecordBatch, windows: inout ThrottleWindows
    ) {
        guard registration.throttle > 0 else {
            registration.notifiedValue = new
            batch.add(registration, old: old, new: new, revision: revision, toMany: toMany, by: by)
            return
        }
        let decision = windows.decide(&registration, old: old, new: new, revision: revision, by: by, at: now)
        if case .send(let first, let writer, let merged) = decision {
            batch.add(
                registration, old: first, new: new, revision: revision, toMany: merged ? nil : toMany, by: writer,
                ownTail: true, folded: merged)
        }
    }

    /// Keeps what throttling decided: the registrations changed (for the next checkpoint), and
    /// the windows holding folded changes, by when they end (for the timer).
    private mutating func record(_ windows: ThrottleWindows) {
        for id in windows.touched { journal.mark(.registration, id) }
        for id in windows.settled { throttled.cancel(id) }
        for (id, end) in windows.folding { throttled.schedule(id, at: end.milliseconds) }
        if !windows.folding.isEmpty { effects.timerMustLook = true }
    }

    /// A new registration bound to the graph: its current value, the places it reads, and the
    /// policy of the computed property its path ends on (if it does). Not yet in the index.
    func bind(_ unbound: Registration) -> Registration {
        var registration = unbound
        let className = graph.objects[registration.objectID]?.className
        registration.derivedPolicy = graph.checker.finalProperty(of: registration.keyPath, from: className).flatMap {
            $0.computed == nil ? nil : $0.notify
        }
        if unbound.reader == nil { registration.reader = observers[registration.observerID]?.reader }
        registration.observerSlot = observers.slot(of: registration.observerID) ?? 0
        let trace = DependencyTrace()
        let value =
            (try? graph.read(registration.keyPath, of: registration.objectID, trace: trace, filter: registration.reader))
            ?? .null
        registration.value = value
        registration.notifiedValue = value
        registration.dependencies = trace.paths
        registration.location = trace.valueLocation
        registration.recordFraming = ChangeRecord.framing(of: registration)
        registration.skipsClient =
            registration.options.contains(.skipOwn) ? observers[registration.observerID]?.client : nil
        return registration
    }

    /// Reads a registration's key path anew (or takes what another registration on the same
    /// object and key path read in this change), moves its dependencies to what it read, and
    /// stores the value; returns it. `writes`: the change's writes.
    private static func reevaluate(
        _ registration: inout Registration, in graph: ObjectGraph, after writes: [Write],
        dependents: inout RegistrationDependents.Rebinding, sharing cache: inout EvaluationCache
    ) -> JSON {
        if let value = directRead(registration, in: graph, after: writes) {
            registration.value = value
            return value
        }
        let evaluation = cache.evaluation(
            of: registration.keyPath, on: registration.objectID, reader: registration.reader
        ) {
            evaluate(registration.keyPath, of: registration.objectID, in: graph, filter: registration.reader)
        }
        dependents.rebind(&registration, to: evaluation.paths)
        registration.location = evaluation.location
        registration.value = evaluation.value
        return evaluation.value
    }

    /// The new value of a registration on one stored key of its own object, which read that
    /// place alone and still does (the key is not computed, the value not a reference): read
    /// where it is stored, the dependencies as they were. What the traced walk would find,
    /// without building its set of places and comparing it with the last (most registrations
    /// are of this kind). nil for any other registration: it is read by the walk. When the
    /// change's one write stored a value at that place, that value is what is there (and the
    /// key is stored, not computed, or the write would have been refused).
    private static func directRead(_ registration: Registration, in graph: ObjectGraph, after writes: [Write])
        -> JSON?
    {
        guard registration.keyPath.components.count == 1, case .key(let key) = registration.keyPath.components[0],
            let location = registration.location, location.objectID == registration.objectID,
            location.keys.count == 1, location.keys[0] == key,
            registration.dependencies.count == 1, registration.dependencies.first == location
        else { return .none }
        let value: JSON
        if writes.count == 1, let stored = writes[0].stored, writes[0].location == location {
            value = stored
        } else {
            guard let object = graph.objects[registration.objectID],
                graph.schema(of: object)?.properties[key]?.computed == nil
            else { return .none }
            value = object.values[key] ?? .null
        }
        // `.none`, not `nil`: JSON is itself `nil`-literal-expressible (`null`).
        guard value.referencedID == nil else { return .none }
        return value
    }

    /// Reads `keyPath` of `objectID`: its value and the places it read.
    private static func evaluate(_ keyPath: KeyPath, of objectID: String, in graph: ObjectGraph, filter: ReadFilter?)
        -> Evaluation
    {
        let trace = DependencyTrace()
        let value = (try? graph.read(keyPath, of: objectID, trace: trace, filter: filter)) ?? .null
        return Evaluation(value: value, paths: trace.paths, location: trace.valueLocation)
    }

    /// Emits a batch's records: every prior record, then every post record.
    mutating func emitBatch(_ batch: RecordBatch) {
        for record in batch.priors { emit(record) }
        for record in batch.posts { emit(record) }
    }
}
