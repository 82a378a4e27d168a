// MARK: - Objects: create, list, delete, retain and release

extension StoreState {
    mutating func createObject(
        id: String?, className: String?, values: JSONObject, generatedID: String, owner: String? = nil,
        at time: Timestamp
    ) throws(CoreError) -> ObjectSnapshot {
        var object = try newObject(
            id: id, className: className, values: values, generatedID: generatedID, owner: owner, at: time)
        let revision = nextRevision()
        object.revision = revision
        graph.insert(object)
        journal.mark(.object, object.id)
        let created = snapshot(object)
        emitAdmin("objectCreated", ["object": .object(created.json), "revision": .int(revision)])
        // References to this id that dangled (the object was deleted) read it again.
        propagate([Write(location: ObjectPath(objectID: object.id, keys: []), policy: .onChange)], revision: revision)
        noteQueryChanges(existenceOf: object)
        return created
    }

    /// The object a create makes, checked whole (its revision is the caller's to set); the graph
    /// is as it was.
    mutating func newObject(
        id: String?, className: String?, values: JSONObject, generatedID: String, owner: String?, at time: Timestamp
    ) throws(CoreError) -> StoredObject {
        if let id { try Names.checkID(id, "object id") }
        if let owner { _ = try observers.existing(owner) }
        if let id, graph.objects[id] != nil {
            throw CoreError(.conflict, "object '\(id)' already exists", details: ["object": .string(id)])
        }
        guard graph.objects.count < limits.maxObjects else {
            throw CoreError(
                .limitExceeded, "the server holds its limit of \(limits.maxObjects) objects",
                details: ["limit": .int(limits.maxObjects)])
        }
        if let className {
            try Names.checkID(className, "class name")
            guard graph.classes[className] != nil else { throw CoreError.notFound("class", className) }
        }
        let id = id ?? Self.freshID(generatedID) { graph.objects[$0] != nil }
        // Check every value against a provisional object, so the checks see its class.
        graph.objects[id] = StoredObject(id: id, className: className, revision: 0, createdAt: time, values: [:])
        do throws(CoreError) {
            for (key, value) in values {
                guard Names.isValidKey(key) else {
                    throw CoreError(.invalidKeyPath, "'\(key)' is not a valid key", details: ["key": .string(key)])
                }
                try graph.checkAssignable(value, to: WriteTarget(objectID: id, inner: [], key: key))
            }
        } catch {
            graph.objects[id] = nil
            throw error
        }
        graph.objects[id] = nil
        var object = StoredObject(id: id, className: className, revision: 0, createdAt: time, values: values)
        object.owner = owner
        object.ownerToken = owner.flatMap { observers[$0]?.access?.tokenID }
        return object
    }

    func listObjects(className: String?, limit: Int, after cursor: String?, reader: ReadFilter?)
        throws(CoreError) -> ObjectPage
    {
        guard let reader else {
            let page = try graph.page(className: className, limit: limit, after: cursor)
            let snapshots = page.ids.compactMap { graph.objects[$0].map { snapshot($0) } }  // retainedBy included
            return ObjectPage(objects: snapshots, next: page.more ? page.ids.last : nil)
        }
        // Readable objects only: pages of ids are read until `limit` of them are found (or none
        // is left), and the cursor is the last one answered: it never names an unreadable one.
        var snapshots: [ObjectSnapshot] = []
        var position = cursor
        while true {
            let page = try graph.page(className: className, limit: max(limit, 64), after: position)
            for id in page.ids {
                guard let object = graph.objects[id], reader.mayRead(graph.identity(of: object)) else { continue }
                if snapshots.count == limit { return ObjectPage(objects: snapshots, next: snapshots.last?.id) }
                snapshots.append(snapshot(object, filter: reader))
            }
            guard page.more, let last = page.ids.last else { return ObjectPage(objects: snapshots, next: nil) }
            position = last
        }
    }

    /// Object `id` if `reader` may read it; 404 when it is missing and could be readable, 403 otherwise.
    func readableObject(_ id: String, _ reader: Reader) throws(CoreError) -> StoredObject {
        try Authorization.check(objectQuestion(.read, id), by: reader.principal, access: reader.access)
        return try graph.existingObject(id)
    }

    /// Deletes an object (section 6.4), or, while an observer retains it, marks it
    /// `releasePending` (6.5): it is deleted when the last retaining observer lets go.
    mutating func deleteObject(_ id: String) throws(CoreError) -> DeleteOutcome {
        _ = try graph.existingObject(id)
        let retainedBy = retainers(of: id)
        if !retainedBy.isEmpty {
            if graph.pendingRelease.contains(id) { return .releasePending(retainedBy: retainedBy, revision: nil) }
            let revision = nextRevision()
            graph.pendingRelease.insert(id)
            journal.mark(.object, id)
            emitAdmin(
                "objectReleasePending",
                [
                    "object": .string(id), "retainedBy": .array(retainedBy.map(JSON.string)),
                    "revision": .int(revision),
                ])
            return .releasePending(retainedBy: retainedBy, revision: revision)
        }
        let revision = nextRevision()
        removeObject(id, revision: revision)
        return .deleted(revision: revision)
    }

    /// Deletes an object whose owner is removed, under the removal's revision, as `DELETE` does:
    /// `releasePending` while an observer retains it (section 14).
    mutating func deleteOwned(_ id: String, revision: Int) {
        guard graph.objects[id] != nil else { return }
        let retainedBy = retainers(of: id)
        guard retainedBy.isEmpty else {
            guard graph.pendingRelease.insert(id).inserted else { return }
            journal.mark(.object, id)
            emitAdmin(
                "objectReleasePending",
                ["object": .string(id), "retainedBy": .array(retainedBy.map(JSON.string)), "revision": .int(revision)])
            return
        }
        removeObject(id, revision: revision)
    }

    /// Removes an object now: its registrations are cancelled (`objectDeleted`), and
    /// registrations that reach it through references see their value become `null`.
    mutating func removeObject(_ id: String, revision: Int) {
        guard let object = graph.objects[id] else { return }
        for registration in registrations.observing(id) {
            removeRegistration(registration, reason: "objectDeleted", revision: revision)
        }
        graph.remove(id)
        journal.mark(.object, id)
        propagate([Write(location: ObjectPath(objectID: id, keys: []), policy: .onChange)], revision: revision)
        noteQueryChanges(existenceOf: object)
        emitAdmin("objectDeleted", ["object": .string(id), "revision": .int(revision)])
    }

    /// Observers with `retainObserved` that observe `objectID` (they keep it alive), sorted.
    func retainers(of objectID: String) -> [String] {
        registrations.observers(of: objectID).filter { observers[$0]?.retainObserved == true }
    }

    /// Deletes the objects among `objectIDs` whose deletion waited for their last retainer,
    /// in id order (never hash order: the order of their events must be the same everywhere).
    mutating func releaseObjects(_ objectIDs: [String], revision: Int) {
        for id in Set(objectIDs).sorted() where graph.pendingRelease.contains(id) && retainers(of: id).isEmpty {
            removeObject(id, revision: revision)
        }
    }
}
