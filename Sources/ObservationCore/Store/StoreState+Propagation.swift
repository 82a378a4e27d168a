// MARK: - The propagator: from a change to change records

/// A to-many mutation, for the registrations that observe the mutated array itself.
struct ToManyChange {
    let location: ObjectPath
    let mutation: ArrayMutation
    let before: [JSON]
    let after: [JSON]
}

extension StoreState {
    /// The place a write at `target` changes, with the policy of the key set there.
    func write(at target: WriteTarget) -> Write {
        let location = ObjectPath(objectID: target.objectID, keys: target.inner + [target.key])
        let topLevelKey = target.inner.first ?? target.key
        let policy =
            graph.objects[target.objectID].flatMap { graph.schema(of: $0)?.properties[topLevelKey]?.notify } ?? .always
        return Write(location: location, policy: policy)
    }

    /// Re-evaluates every registration the writes affect (after they were applied), re-binds
    /// its dependencies, and emits its records: every prior record first, then every post
    /// record (section 6.2), in registration creation order. Registrations on the same object
    /// and key path share one evaluation (the graph does not change while they are visited).
    mutating func propagate(_ writes: [Write], revision: Int, toMany: ToManyChange? = nil) {
        let affected = registrations.affected(by: writes)
        guard !affected.isEmpty else { return }
        var batch = RecordBatch(sharesTails: affected.count > 1, by: by)
        var evaluations = EvaluationCache(enabled: affected.count > 1)
        var windowsOpened: [(id: String, end: Timestamp)] = []
        var throttledTouched: [String] = []
        let graph = self.graph  // read while the registrations change in place
        let (by, now) = (self.by, clock)
        for (id, policy) in affected {
            registrations.update(id) { registration, dependents in
                let old = registration.value
                let new = Self.reevaluate(&registration, in: graph, dependents: &dependents, sharing: &evaluations)
                let governing = registration.derivedPolicy ?? policy
                guard governing == .always || (governing == .onChange && old != new) else { return }
                registration.notifiedValue = new
                if registration.throttle > 0 {
                    throttledTouched.append(registration.id)
                    guard Self.sendsNow(&registration, old: old, revision: revision, by: by, at: now) else {
                        if let end = registration.windowEnd { windowsOpened.append((registration.id, end)) }
                        return
                    }
                }
                batch.add(registration, old: old, new: new, revision: revision, toMany: toMany)
            }
        }
        for id in throttledTouched { journal.mark(.registration, id) }
        for (id, end) in windowsOpened { throttled.schedule(id, at: end.milliseconds) }
        if !windowsOpened.isEmpty { effects.timerMustLook = true }
        emitBatch(batch)
    }

    /// A throttled registration's change at `now`: true when its record goes out now (no
    /// window is open; one opens), false when it is folded into the record the window's end
    /// sends (section 7.3).
    private static func sendsNow(
        _ registration: inout Registration, old: JSON, revision: Int, by: String?, at now: Timestamp
    ) -> Bool {
        if let end = registration.windowEnd, now < end {
            if var folded = registration.folded {
                folded.revision = revision
                if folded.by != by { folded.by = nil }
                registration.folded = folded
            } else {
                registration.folded = FoldedChange(old: old, revision: revision, by: by)
            }
            return false
        }
        registration.windowEnd = Timestamp(milliseconds: now.milliseconds + Int64(registration.throttle))
        return true
    }

    /// Sends the folded record of every throttled registration whose window ended by `time`
    /// (none when its value ended where it started), in deadline order; each sent record
    /// opens a new window. Returns how many records went out.
    mutating func flushThrottled(at time: Timestamp) -> Int {
        var sent = 0
        while let next = throttled.first, next.deadline <= time.milliseconds {
            _ = throttled.popFirst()
            let record = registrations.update(next.id) { registration, _ -> (String, [UInt8], Int)? in
                guard let folded = registration.folded else { return nil }
                registration.folded = nil
                guard folded.old != registration.value else {
                    registration.windowEnd = nil
                    return nil
                }
                registration.windowEnd = Timestamp(milliseconds: time.milliseconds + Int64(registration.throttle))
                if let own = registration.skipsClient, own == folded.by { return nil }
                var record = ChangeRecord(revision: folded.revision)
                record.old = registration.options.contains(.old) ? folded.old : nil
                record.new = registration.options.contains(.new) ? registration.value : nil
                record.by = folded.by
                let bytes = ChangeRecord.encode(registration, tail: record.encodedTail())
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
    /// `old` = the value at its last notification and `new` = the value now.
    mutating func notifyManually(_ id: String, keyPaths: [KeyPath], revision: Int) {
        let wanted = Set(keyPaths.map(\.description))
        var batch = RecordBatch(sharesTails: true, by: by)
        var evaluations = EvaluationCache(enabled: false)
        let graph = self.graph
        for chosen in registrations.observing(id) where wanted.contains(chosen.keyPath.description) {
            registrations.update(chosen.id) { registration, dependents in
                let old = registration.notifiedValue
                let new = Self.reevaluate(&registration, in: graph, dependents: &dependents, sharing: &evaluations)
                registration.notifiedValue = new
                batch.add(registration, old: old, new: new, revision: revision, toMany: nil)
            }
        }
        emitBatch(batch)
    }

    /// A new registration bound to the graph: its current value, the places it reads, and the
    /// policy of the computed property its path ends on (if it does). Not yet in the index.
    func bind(_ unbound: Registration) -> Registration {
        var registration = unbound
        let className = graph.objects[registration.objectID]?.className
        registration.derivedPolicy = graph.checker.finalProperty(of: registration.keyPath, from: className).flatMap {
            $0.computed == nil ? nil : $0.notify
        }
        let trace = DependencyTrace()
        let value = (try? graph.read(registration.keyPath, of: registration.objectID, trace: trace)) ?? .null
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
    /// stores the value; returns it.
    private static func reevaluate(
        _ registration: inout Registration, in graph: ObjectGraph, dependents: inout DependentIndex,
        sharing cache: inout EvaluationCache
    ) -> JSON {
        let evaluation = cache.evaluation(of: registration.keyPath, on: registration.objectID) {
            evaluate(registration.keyPath, of: registration.objectID, in: graph)
        }
        dependents.rebind(&registration, to: evaluation.paths)
        registration.location = evaluation.location
        registration.value = evaluation.value
        return evaluation.value
    }

    /// Reads `keyPath` of `objectID`: its value and the places it read.
    private static func evaluate(_ keyPath: KeyPath, of objectID: String, in graph: ObjectGraph) -> Evaluation {
        let trace = DependencyTrace()
        let value = (try? graph.read(keyPath, of: objectID, trace: trace)) ?? .null
        return Evaluation(value: value, paths: trace.paths, location: trace.valueLocation)
    }

    /// Emits a batch's records: every prior record, then every post record.
    private mutating func emitBatch(_ batch: RecordBatch) {
        for (observerID, bytes) in batch.priors + batch.posts { emit("change", bytes, to: observerID) }
    }
}

/// What reading a key path on an object gave: its value and the places it read.
private struct Evaluation {
    let value: JSON
    let paths: Set<ObjectPath>
    let location: ObjectPath?
}

/// Evaluations by (object, key path) during one propagation (off for a single registration:
/// nothing to share, and the lookup would cost).
private struct EvaluationCache {
    private struct Key: Hashable {
        let objectID: String
        let keyPath: String
    }

    private var known: [Key: Evaluation]?

    init(enabled: Bool) { known = enabled ? [:] : nil }

    mutating func evaluation(of keyPath: KeyPath, on objectID: String, read: () -> Evaluation) -> Evaluation {
        guard known != nil else { return read() }
        let key = Key(objectID: objectID, keyPath: keyPath.description)
        if let evaluation = known?[key] { return evaluation }
        let evaluation = read()
        known?[key] = evaluation
        return evaluation
    }
}

/// The records of one change, prior ones apart, with record tails shared between
/// registrations on the same value and options (encoded once, not once per observer).
private struct RecordBatch {
    var priors: [(String, [UInt8])] = []
    var posts: [(String, [UInt8])] = []
    private var tails: [TailKey: [UInt8]] = [:]
    /// Off for a single registration: nothing to share, and the lookup would cost.
    let sharesTails: Bool
    /// The client whose write made the change (`by`).
    let by: String?

    init(sharesTails: Bool, by: String?) {
        self.sharesTails = sharesTails
        self.by = by
    }

    mutating func add(_ registration: Registration, old: JSON, new: JSON, revision: Int, toMany: ToManyChange?) {
        if let own = registration.skipsClient, own == by { return }  // skipOwn: not its own echo
        var record = ChangeRecord(revision: revision)
        record.by = by
        var recordOld: JSON? = old
        var recordNew: JSON? = new
        if let toMany, registration.location == toMany.location, registration.keyPath.keys != nil {
            record.kind = toMany.mutation.kind.rawValue
            record.indexes = toMany.mutation.indexes
            recordOld = toMany.mutation.kind == .insertion ? nil : .array(toMany.mutation.affected(in: toMany.before))
            recordNew = toMany.mutation.kind == .removal ? nil : .array(toMany.mutation.affected(in: toMany.after))
        }
        if registration.options.contains(.prior) {
            var prior = record
            prior.flag = .prior
            prior.old = registration.options.contains(.old) ? recordOld : nil
            priors.append((registration.observerID, encode(registration, prior)))
        }
        record.old = registration.options.contains(.old) ? recordOld : nil
        record.new = registration.options.contains(.new) ? recordNew : nil
        posts.append((registration.observerID, encode(registration, record)))
    }

    private mutating func encode(_ registration: Registration, _ record: ChangeRecord) -> [UInt8] {
        guard sharesTails else { return ChangeRecord.encode(registration, tail: record.encodedTail()) }
        let key = TailKey(
            objectID: registration.objectID, keyPath: registration.keyPath.description, kind: record.kind,
            hasOld: record.old != nil, hasNew: record.new != nil, prior: record.flag == .prior)
        if let tail = tails[key] { return ChangeRecord.encode(registration, tail: tail) }
        let tail = record.encodedTail()
        tails[key] = tail
        return ChangeRecord.encode(registration, tail: tail)
    }
}

/// Registrations on the same object and key path, with the same fields asked for, share a record tail.
private struct TailKey: Hashable {
    let objectID: String
    let keyPath: String
    let kind: String
    let hasOld: Bool
    let hasNew: Bool
    let prior: Bool
}
