// MARK: - A transaction's effects: one change of many writes, under one revision

/// One operation of a transaction, applied to the graph, its effects still to make.
enum StagedOperation {
    /// A set, patch or mutate: its writes, a mutate's to-many change, what the admin stream is told.
    case wrote([Write], toMany: ToManyChange?, changed: [ValueChange])
    /// A patch without values: nothing changes.
    case unchanged
    case created(StoredObject, ObjectSnapshot)
    case deleted(String)
    /// A delete of a retained object; `newly`: it was not pending release before.
    case releasePending(String, retainedBy: [String], newly: Bool)
    case notified(String, [KeyPath])
    case posted(name: String, object: String?, userInfo: JSON?)
}

/// A value stored by an operation, as the admin stream's `valueChanged` tells it.
struct ValueChange {
    let target: WriteTarget
    let value: JSON
    var extra: JSONObject = [:]
}

/// The objects a transaction's staged operations touched, as they were before it: what undoes
/// them when a later operation is refused, and what its query records are computed from.
struct GraphUndo {
    struct Entry {
        let id: String
        /// The object before the transaction (nil: it did not exist).
        let object: StoredObject?
        let pendingRelease: Bool
    }

    /// In the order they were first touched.
    private(set) var touched: [Entry] = []
    /// The ids touched, once there are many (a few are found faster in `touched`). Looked up only.
    private var seen: Set<String>?

    private func saved(_ id: String) -> Entry? {
        if let seen { return seen.contains(id) ? touched.first { $0.id == id } : nil }
        return touched.first { $0.id == id }
    }

    /// Keeps object `id` as it is now, the first time it is touched.
    mutating func save(_ id: String, in graph: ObjectGraph) {
        if let seen {
            guard !seen.contains(id) else { return }
        } else if touched.contains(where: { $0.id == id }) {
            return
        }
        touched.append(Entry(id: id, object: graph.objects[id], pendingRelease: graph.pendingRelease.contains(id)))
        if seen != nil {
            seen?.insert(id)
        } else if touched.count > 8 {
            seen = Set(touched.map(\.id))
        }
    }

    /// An operation's `ifRevision` is compared with the object's revision before the transaction.
    func checkRevision(of id: String, _ expected: Int?, in graph: ObjectGraph) throws(CoreError) {
        guard let expected else { return }
        let before = saved(id).map(\.object) ?? graph.objects[id]
        guard let before, before.revision == expected else {
            throw CoreError(
                .revisionMismatch,
                "object '\(id)' was \(before.map { "at revision \($0.revision)" } ?? "missing") before the transaction, "
                    + "not at \(expected)",
                details: ["revision": before.map { .int($0.revision) } ?? .null, "expected": .int(expected)])
        }
    }

    /// Puts every touched object back as it was (latest first), indexes included.
    func restore(_ graph: inout ObjectGraph) {
        for entry in touched.reversed() {
            let now = graph.objects[entry.id]
            if let before = entry.object, let now, now.className == before.className, now.owner == before.owner {
                graph.objects[entry.id] = before  // the same identity: its indexes hold already
            } else {
                graph.remove(entry.id)
                if let before = entry.object { graph.insert(before) }
            }
            if entry.pendingRelease {
                graph.pendingRelease.insert(entry.id)
            } else {
                graph.pendingRelease.remove(entry.id)
            }
        }
    }
}

extension StoreState {
    /// The effects of staged operations, now that all of them hold, under `revision` (taken):
    /// per observer, prior records, change records (one per registration), query records,
    /// then notifications in operation order; the admin stream's events in operation order.
    /// Returns each operation's result.
    mutating func finish(_ staged: [StagedOperation], touched: [GraphUndo.Entry], revision: Int)
        -> [OperationResult]
    {
        for entry in touched { journal.mark(.object, entry.id) }
        // A deleted object's registrations end, as `DELETE` ends them.
        for case .deleted(let id) in staged {
            for registration in registrations.observing(id) {
                removeRegistration(registration, reason: "objectDeleted", revision: revision)
            }
        }
        recordChanges(staged, revision: revision)
        noteQueryChanges(of: touched)
        flushQueryChanges()
        var results: [OperationResult] = []
        results.reserveCapacity(staged.count)
        for operation in staged {
            switch operation {
            case .wrote(_, _, let changed):
                for change in changed {
                    emitValueChanged(change.target, change.value, revision: revision, extra: change.extra)
                }
                results.append(.done)
            case .unchanged, .notified:
                results.append(.done)
            case .created(_, let snapshot):
                emitAdmin("objectCreated", ["object": .object(snapshot.json), "revision": .int(revision)])
                results.append(.created(snapshot))
            case .deleted(let id):
                emitAdmin("objectDeleted", ["object": .string(id), "revision": .int(revision)])
                results.append(.done)
            case .releasePending(let id, let retainedBy, let newly):
                if newly {
                    emitAdmin(
                        "objectReleasePending",
                        [
                            "object": .string(id), "retainedBy": .array(retainedBy.map(JSON.string)),
                            "revision": .int(revision),
                        ])
                }
                results.append(.releasePending(retainedBy: retainedBy))
            case .posted(let name, let object, let userInfo):
                results.append(.delivered(deliver(name: name, object: object, userInfo: userInfo, revision: revision)))
            }
        }
        return results
    }

    /// The change records of every write and notify of the transaction, in one batch: a
    /// registration that one operation reached gets that operation's record; one that several
    /// reached gets one `setting` record from its value before to its value after, if they differ.
    private mutating func recordChanges(_ staged: [StagedOperation], revision: Int) {
        // One write and nothing else to notify: exactly its single request's propagation.
        if staged.count == 1, case .wrote(let writes, let toMany, _) = staged[0] {
            propagate(writes, revision: revision, toMany: toMany)
            return
        }
        struct Reach {
            let position: RegistrationIndex.Position
            var policy: NotifyPolicy
            let operation: Int
            var count = 0
        }
        var reached: [Int: Reach] = [:]  // by registration sequence; visited sorted
        var writes: [Write] = []
        for (index, operation) in staged.enumerated() {
            let own: [Write]
            switch operation {
            case .wrote(let changes, _, _): own = changes
            case .created(let object, _):
                own = [Write(location: ObjectPath(objectID: object.id, keys: []), policy: .onChange)]
            case .deleted(let id): own = [Write(location: ObjectPath(objectID: id, keys: []), policy: .onChange)]
            default: continue
            }
            writes += own
            for (sequence, position, policy) in registrations.affected(by: own) {
                var reach = reached[sequence] ?? Reach(position: position, policy: policy, operation: index)
                if reach.count > 0 { reach.policy = RegistrationIndex.eager(reach.policy, policy) }
                reach.count += 1
                reached[sequence] = reach
            }
        }
        var notified: [(id: String, paths: [KeyPath], sequences: [Int])] = []
        for case .notified(let id, let paths) in staged {
            let sequences = manuallyNotified(id, keyPaths: paths).map(\.sequence)
            // A write of a `manual` key reaches no registration (section 6.3): the notify's record stands.
            for sequence in sequences where reached[sequence]?.policy != .manual { reached[sequence]?.count += 1 }
            notified.append((id, paths, sequences))
        }
        let ordered = reached.sorted { $0.key < $1.key }
        let affected = ordered.map { sequence, reach in
            // Reached by several: a record only when the value changed (never for `manual` keys).
            (
                sequence, reach.position,
                reach.count > 1 && reach.policy == .always ? NotifyPolicy.onChange : reach.policy
            )
        }
        var batch = RecordBatch(sharesTails: true, tx: tx)
        if !affected.isEmpty {
            collectRecords(affected, after: writes, revision: revision, into: &batch) { index in
                let reach = ordered[index].value
                guard reach.count == 1, case .wrote(_, let toMany, _) = staged[reach.operation] else { return nil }
                return toMany
            }
        }
        var skipping = Set(reached.filter { $0.value.policy != .manual }.keys)
        for (id, paths, sequences) in notified {
            collectManualRecords(id, keyPaths: paths, revision: revision, skipping: skipping, into: &batch)
            skipping.formUnion(sequences)
        }
        emitBatch(batch)
    }

    /// What the transaction changed for the queries, object by object: from each touched
    /// object as it was before to what it is now (so a key written twice is one change).
    private mutating func noteQueryChanges(of touched: [GraphUndo.Entry]) {
        guard !queries.isEmpty else { return }
        for entry in touched {
            switch (entry.object, graph.objects[entry.id]) {
            case (nil, nil): continue
            case (nil, let created?): noteQueryChanges(existenceOf: created)
            case (let deleted?, nil): noteQueryChanges(existenceOf: deleted)
            case (let before?, let after?):
                var keys = Set(before.values.map(\.key)).union(after.values.map(\.key))
                keys = keys.filter { before.values[$0] != after.values[$0] }
                for key in keys.sorted() where queries.mayRead(key, of: entry.id, className: after.className) {
                    queryChanges.append(
                        QueryChange(
                            objectID: entry.id, className: after.className, ownerToken: after.ownerToken, key: key,
                            values: after.values, old: before.values[key] ?? .null))
                }
            }
        }
    }
}
