// MARK: - Key-value coding: the writes (setValue:forKeyPath:, PATCH, to-many mutations, notify)

extension StoreState {
    mutating func setValue(_ value: JSON, at keyPath: String, of id: String, ifRevision: Int?) throws(CoreError)
        -> Int
    {
        let (target, position) = try graph.checkedTarget(
            value, at: try KeyPath(keyPath), of: id, ifRevision: ifRevision)
        let probe = queries.isEmpty ? nil : queryProbe(target.objectID, keys: [target.inner.first ?? target.key])
        let revision = nextRevision()
        store(value, at: target, revision: revision, position: position)
        if let known = registrations.dependents(of: target.objectID) {
            propagate([write(at: target, storing: value, position: position)], revision: revision, among: known)
        }
        if let probe { noteQueryChanges(probe) }
        emitValueChanged(target, value, revision: revision)
        return revision
    }

    /// Sets several top-level keys at once, under one revision (all or none).
    mutating func patch(_ values: JSONObject, of id: String, ifRevision: Int?) throws(CoreError) -> Int {
        let object = try graph.existingObject(id)
        try graph.checkRevision(object, ifRevision)
        guard !values.isEmpty else { return object.revision }
        let targets = try patchTargets(values, of: id)
        let revision = nextRevision()
        applyPatch(targets, of: id, revision: revision)
        return revision
    }

    /// Where each of `values`' keys goes on object `id`, each checked (nothing is stored).
    func patchTargets(_ values: JSONObject, of id: String) throws(CoreError) -> [(WriteTarget, JSON)] {
        var targets: [(WriteTarget, JSON)] = []
        for (key, value) in values {
            guard Names.isValidKey(key) else {
                throw CoreError(
                    .invalidKeyPath, "'\(key)' is not a key (PATCH sets keys, not key paths)",
                    details: ["key": .string(key)])
            }
            let target = WriteTarget(objectID: id, inner: [], key: key)
            try graph.checkAssignable(value, to: target)
            targets.append((target, value))
        }
        return targets
    }

    /// Stores checked `targets` of object `id` under `revision`, with their records and events.
    mutating func applyPatch(_ targets: [(WriteTarget, JSON)], of id: String, revision: Int) {
        let probe = queries.isEmpty ? nil : queryProbe(id, keys: targets.map(\.0.key))
        for (target, value) in targets { store(value, at: target, revision: revision) }
        propagate(targets.map { write(at: $0.0, storing: $0.1) }, revision: revision)
        if let probe { noteQueryChanges(probe) }
        for (target, value) in targets { emitValueChanged(target, value, revision: revision) }
    }

    /// Applies a to-many mutation to the array at `keyPath`.
    mutating func mutate(
        _ kind: String, indexes: [Int], values: [JSON], at keyPath: String, of id: String, ifRevision: Int?
    ) throws(CoreError) -> Int {
        let (target, mutation, array, result) = try checkedMutation(
            kind, indexes: indexes, values: values, at: keyPath, of: id, ifRevision: ifRevision)
        let probe = queries.isEmpty ? nil : queryProbe(target.objectID, keys: [target.inner.first ?? target.key])
        let revision = nextRevision()
        store(.array(result), at: target, revision: revision)
        let change = write(at: target, storing: .array(result))
        propagate(
            [change], revision: revision,
            toMany: ToManyChange(location: change.location, mutation: mutation, before: array, after: result))
        if let probe { noteQueryChanges(probe) }
        emitValueChanged(target, .array(result), revision: revision, extra: mutation.adminMembers)
        return revision
    }

    /// A to-many mutation checked whole: where it goes, what it does, the array before and after.
    func checkedMutation(
        _ kind: String, indexes: [Int], values: [JSON], at keyPath: String, of id: String, ifRevision: Int?
    ) throws(CoreError) -> (target: WriteTarget, mutation: ArrayMutation, before: [JSON], after: [JSON]) {
        guard let kind = ArrayMutation.Kind(rawValue: kind) else {
            throw CoreError(.invalidRequest, "kind must be insertion, removal or replacement, not '\(kind)'")
        }
        let mutation = try ArrayMutation(kind: kind, indexes: indexes, values: values)
        let path = try KeyPath(keyPath)
        let target = try graph.writeTarget(path, of: id, ifRevision: ifRevision)
        let current = graph.storedValue(at: target)
        guard case .array(let array) = current else {
            throw CoreError(
                .notACollection, "'\(path)' is \(current.isNull ? "null" : current.typeNameWithArticle), not an array")
        }
        let result = try mutation.applied(to: array)
        try graph.checkAssignable(.array(result), to: target)
        return (target, mutation, array, result)
    }

    /// `didChangeValueForKey:` (for `manual` keys): one record per registration on those key
    /// paths, `old` being the value at its last notification.
    mutating func notify(_ id: String, keyPaths: [String]) throws(CoreError) -> Int {
        let paths = try checkedNotification(id, keyPaths: keyPaths)
        let revision = nextRevision()
        notifyManually(id, keyPaths: paths, revision: revision)
        return revision
    }

    /// The key paths a `notify` of object `id` names, checked.
    func checkedNotification(_ id: String, keyPaths: [String]) throws(CoreError) -> [KeyPath] {
        guard !keyPaths.isEmpty else { throw CoreError(.invalidRequest, "keyPaths must not be empty") }
        var paths: [KeyPath] = []
        for text in keyPaths { paths.append(try KeyPath(text)) }
        let object = try graph.existingObject(id)
        for path in paths { try graph.checker.check(path, from: object.className) }
        return paths
    }

    /// Stores a checked value and marks the object for the next checkpoint.
    private mutating func store(_ value: JSON, at target: WriteTarget, revision: Int, position: ObjectPosition? = nil) {
        graph.store(value, at: target, revision: revision, position: position)
        journal.mark(.object, target.objectID)
    }

    /// The admin stream's `valueChanged`: kept as its parts, encoded when read (see
    /// `DeferredValueChanged`).
    mutating func emitValueChanged(_ target: WriteTarget, _ value: JSON, revision: Int, extra: JSONObject = [:]) {
        let record = DeferredValueChanged(
            target: target, value: value, extra: extra, revision: revision, by: by, tx: tx)
        let current = self.revision
        emitAdmin { Event(id: $0, valueChanged: record, revision: current) }
    }
}

/// The admin stream's `valueChanged`, kept as its parts until a reader takes it: encoding
/// it on every write was a large share of an unobserved write's time (BENCHMARKS.md, "Figures behind the code"),
/// and most of these events leave the admin log unread. Its parts are values the write already made (the target's strings, the value
/// stored, the client), so holding them costs one allocation, this object; once the value
/// is overwritten, this is what keeps it, so its size counts in full (`JSON.estimatedBytes`).
final class DeferredValueChanged: Sendable {
    private let target: WriteTarget
    private let value: JSON
    private let extra: JSONObject
    private let revision: Int
    private let by: String?
    private let tx: String?
    /// A bound on what this record holds and encodes to (`JSON.estimatedBytes`), counted
    /// against the admin log's byte limit.
    let estimatedBytes: Int

    init(target: WriteTarget, value: JSON, extra: JSONObject, revision: Int, by: String?, tx: String?) {
        self.tx = tx
        self.target = target
        self.value = value
        self.extra = extra
        self.revision = revision
        self.by = by
        // The record's member names and the object (the target's strings are the graph's own).
        var estimate = 96 + target.objectID.utf8.count + target.key.utf8.count + value.estimatedBytes
        for part in target.inner { estimate += part.utf8.count + 1 }
        for (key, member) in extra { estimate += JSON.estimatedBytes(of: key) + 2 + member.estimatedBytes }
        estimatedBytes =
            estimate + (by.map { JSON.estimatedBytes(of: $0) + 6 } ?? 0)
            + (tx.map { JSON.estimatedBytes(of: $0) + 6 } ?? 0)
    }

    /// `{"object":…,"keyPath":…,"value":…,<extra>,"revision":n,"by":…}`
    func encode() -> [UInt8] {
        StoreState.adminRecord(by: by, tx: tx) { writer in
            writer.raw("\"object\":")
            writer.write(target.objectID)
            writer.raw(",\"keyPath\":")
            writer.write(target.inner.isEmpty ? target.key : target.keys.joined(separator: "."))
            writer.raw(",\"value\":")
            writer.write(value)
            for (key, member) in extra {
                writer.raw(",")
                writer.key(key)
                writer.write(member)
            }
            writer.raw(",\"revision\":")
            writer.write(revision)
        }
    }
}
