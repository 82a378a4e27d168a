// MARK: - From a change to change records

extension StoreState {
    /// A change to stored data: the place written and the notify policy of the key set there.
    struct Write {
        let location: ObjectPath
        let policy: NotifyPolicy
    }

    /// A to-many mutation, for the registrations that observe the mutated array itself.
    struct ToManyChange {
        let location: ObjectPath
        let mutation: ArrayMutation
        let before: [JSON]
        let after: [JSON]
    }

    /// The places a write at `target` changes, with the policy of the key set there.
    func write(at target: WriteTarget) -> Write {
        let location = ObjectPath(objectID: target.objectID, keys: target.inner + [target.key])
        let topLevelKey = target.inner.first ?? target.key
        let policy = objects[target.objectID].flatMap { schema(of: $0)?.properties[topLevelKey]?.notify } ?? .always
        return Write(location: location, policy: policy)
    }

    /// Registrations a set of writes affects, each with the policy that governs it
    /// (the most eager of the policies of the keys written).
    mutating func affected(by writes: [Write]) -> [String: NotifyPolicy] {
        var result: [String: NotifyPolicy] = [:]
        for write in writes {
            guard let byKey = dependents[write.location.objectID] else { continue }
            let candidates: Set<String>
            if let first = write.location.keys.first {
                candidates = byKey[first] ?? []
            } else {
                candidates = byKey.values.reduce(into: Set<String>()) { $0.formUnion($1) }
            }
            for id in candidates {
                let reads = registrations.inPlace(id) { registration in
                    write.location.keys.isEmpty
                        || registration.dependencies.contains { !$0.keys.isEmpty && $0.overlaps(write.location) }
                }
                guard reads == true else { continue }
                result[id] = Self.eager(result[id], write.policy)
            }
        }
        return result
    }

    private static func eager(_ a: NotifyPolicy?, _ b: NotifyPolicy) -> NotifyPolicy {
        guard let a else { return b }
        if a == .always || b == .always { return .always }
        return a == .onChange || b == .onChange ? .onChange : .manual
    }

    /// Re-evaluates every registration the writes affect (after they were applied), re-binds
    /// its dependencies, and appends its records: every prior record first, then every post record.
    mutating func propagate(_ writes: [Write], revision: Int, toMany: ToManyChange? = nil) {
        let affected = affected(by: writes)
        guard !affected.isEmpty else { return }
        var batch = RecordBatch()
        for id in inCreationOrder(affected.keys) {
            // Moved out and back in (not copied): a copy retains every field of the record.
            guard var registration = registrations.removeValue(forKey: id) else { continue }
            defer { registrations[id] = registration }
            let old = registration.value
            let (new, trace) = evaluate(registration)
            rebind(&registration, to: trace)
            registration.value = new
            let policy = registration.derivedPolicy ?? affected[registration.id] ?? .always
            if policy == .always || (policy == .onChange && old != new) {
                registration.notifiedValue = new
                batch.add(registration, old: old, new: new, revision: revision, toMany: toMany)
            }
        }
        append(batch)
    }

    /// Registration ids sorted by creation (the order of records within one change).
    private mutating func inCreationOrder(_ ids: some Sequence<String>) -> [String] {
        var keyed: [(sequence: Int, id: String)] = []
        for id in ids {
            if let sequence = registrations.inPlace(id, { $0.sequence }) { keyed.append((sequence, id)) }
        }
        keyed.sort { $0.sequence < $1.sequence }
        return keyed.map(\.id)
    }

    /// `didChangeValueForKey:` for the registrations of `id` on `keyPaths`: one record each, with
    /// `old` = the value at its last notification and `new` = the value now.
    mutating func notifyManually(_ id: String, keyPaths: [KeyPath], revision: Int) {
        let wanted = Set(keyPaths.map(\.description))
        let chosen = (registrationsByObject[id] ?? []).compactMap { registrations[$0] }
            .filter { wanted.contains($0.keyPath.description) }.sorted { $0.sequence < $1.sequence }
        var batch = RecordBatch()
        for var registration in chosen {
            let old = registration.notifiedValue
            let (new, trace) = evaluate(registration)
            rebind(&registration, to: trace)
            registration.value = new
            registration.notifiedValue = new
            batch.add(registration, old: old, new: new, revision: revision, toMany: nil)
            registrations[registration.id] = registration
        }
        append(batch)
    }

    /// Appends a batch to the observers' logs: every prior record, then every post record (section 6.2).
    private mutating func append(_ batch: RecordBatch) {
        for (observerID, bytes) in batch.priors + batch.posts { appendEvent("change", bytes, to: observerID) }
    }

    /// The value of a registration's key path now, with what it read.
    func evaluate(_ registration: Registration) -> (JSON, DependencyTrace) {
        let trace = DependencyTrace()
        let value = (try? read(registration.keyPath, of: registration.objectID, trace: trace)) ?? .null
        return (value, trace)
    }

    /// Moves a registration's entries in the dependency index to what it reads now.
    mutating func rebind(_ registration: inout Registration, to trace: DependencyTrace) {
        registration.location = trace.valueLocation
        guard trace.paths != registration.dependencies else { return }
        for path in registration.dependencies.subtracting(trace.paths) {
            dependents[path.objectID]?[path.keys.first ?? "", default: []].remove(registration.id)
            if dependents[path.objectID]?[path.keys.first ?? ""]?.isEmpty == true {
                dependents[path.objectID]?[path.keys.first ?? ""] = nil
            }
            if dependents[path.objectID]?.isEmpty == true { dependents[path.objectID] = nil }
        }
        for path in trace.paths.subtracting(registration.dependencies) {
            dependents[path.objectID, default: [:]][path.keys.first ?? "", default: []].insert(registration.id)
        }
        registration.dependencies = trace.paths
    }

    /// Appends an event to an observer's log and marks the log to be woken.
    mutating func appendEvent(_ name: String, _ bytes: [UInt8], to observerID: String) {
        guard let log = observers.inPlace(observerID, { $0.log }) else { return }
        log.append(name, bytes)
        touchedLogs[ObjectIdentifier(log)] = log
        journal.mark(.lastEventID, observerID)
    }

    /// Appends an event to the admin stream.
    mutating func appendAdmin(_ name: String, _ members: JSONObject) {
        adminLog.append(name, JSON.object(members).encoded())
        touchedLogs[ObjectIdentifier(adminLog)] = adminLog
    }

}

/// The records of one change, prior ones apart, with record tails shared between
/// registrations on the same value and options (encoded once, not once per observer).
private struct RecordBatch {
    var priors: [(String, [UInt8])] = []
    var posts: [(String, [UInt8])] = []
    private var tails: [TailKey: [UInt8]] = [:]

    mutating func add(
        _ registration: Registration, old: JSON, new: JSON, revision: Int, toMany: StoreState.ToManyChange?
    ) {
        var record = ChangeRecord(revision: revision)
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
