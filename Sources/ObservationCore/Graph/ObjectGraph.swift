/// The object graph: classes, objects and their stored values, and the id indexes, with
/// key-value coding over them (reads that follow references and aggregate, writes that find
/// their target without creating anything on the way).
///
/// Owns its fields; knows nothing of observers or registrations. Reads never change it.
/// Not thread-safe by itself: it lives in `StoreState`, behind the store's lock.
struct ObjectGraph: Sendable {
    struct ClassRecord: Sendable {
        var schema: ClassSchema
        var revision: Int
    }

    var classes: [String: ClassRecord] = [:]
    var objects: [String: StoredObject] = [:]
    /// All object ids, sorted (paging).
    var objectIDs = SortedIDs()
    /// Object ids per class name, sorted (paging by class, class deletion and replacement).
    var objectIDsByClass: [String: SortedIDs] = [:]
    /// Objects deleted while an observer retains them (`retainObserved`): still readable.
    var pendingRelease: Set<String> = []
    /// The objects each observer owns (section 14), deleted with it.
    var owned: [String: Set<String>] = [:]

    var checker: KeyPathChecker {
        KeyPathChecker { [classes] name in classes[name]?.schema }
    }

    func schema(of object: StoredObject) -> ClassSchema? {
        schema(ofClass: object.className)
    }

    func schema(ofClass className: String?) -> ClassSchema? {
        className.flatMap { classes[$0]?.schema }
    }

    func existingObject(_ id: String) throws(CoreError) -> StoredObject {
        guard let object = objects[id] else { throw CoreError.notFound("object", id) }
        return object
    }

    func checkRevision(_ object: StoredObject, _ expected: Int?) throws(CoreError) {
        try checkRevision(of: object.id, at: object.revision, expected)
    }

    /// Throws `revisionMismatch` unless object `id`, at `revision`, is at `expected` (when given).
    func checkRevision(of id: String, at revision: Int, _ expected: Int?) throws(CoreError) {
        if let expected, expected != revision {
            throw CoreError(
                .revisionMismatch, "object '\(id)' is at revision \(revision), not \(expected)",
                details: ["revision": .int(revision), "expected": .int(expected)])
        }
    }

    /// Adds an object (its id is new) to the graph and its indexes.
    mutating func insert(_ object: StoredObject) {
        objects[object.id] = object
        objectIDs.insert(object.id)
        if let className = object.className { objectIDsByClass[className, default: SortedIDs()].insert(object.id) }
        if let owner = object.owner { owned[owner, default: []].insert(object.id) }
    }

    /// Takes an object out of the graph and its indexes.
    mutating func remove(_ id: String) {
        guard let object = objects.removeValue(forKey: id) else { return }
        pendingRelease.remove(id)
        objectIDs.remove(id)
        if let owner = object.owner {
            owned[owner]?.remove(id)
            if owned[owner]?.isEmpty == true { owned[owner] = nil }
        }
        if let className = object.className {
            objectIDsByClass[className]?.remove(id)
            if objectIDsByClass[className]?.count == 0 { objectIDsByClass[className] = nil }
        }
    }

    /// One page of objects in id order (all, or of one class), after the cursor `after`.
    func page(className: String?, limit: Int, after cursor: String?) throws(CoreError) -> (ids: [String], more: Bool) {
        let ids: SortedIDs
        if let className {
            guard classes[className] != nil else { throw CoreError.notFound("class", className) }
            ids = objectIDsByClass[className] ?? SortedIDs()
        } else {
            ids = objectIDs
        }
        return ids.page(after: cursor, limit: limit)
    }
}

/// Where an object is in `ObjectGraph.objects`: valid while no object is added or removed.
typealias ObjectPosition = Dictionary<String, StoredObject>.Index
