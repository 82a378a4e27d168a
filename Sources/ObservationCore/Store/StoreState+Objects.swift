// MARK: - Objects: create, list, delete

extension StoreState {
    mutating func createObject(id: String?, className: String?, values: JSONObject, now: Timestamp) throws(CoreError)
        -> ObjectSnapshot
    {
        if let id { try Names.checkID(id, "object id") }
        if let id, objects[id] != nil {
            throw CoreError(.conflict, "object '\(id)' already exists", details: ["object": .string(id)])
        }
        guard objects.count < limits.maxObjects else {
            throw CoreError(
                .limitExceeded, "the server holds its limit of \(limits.maxObjects) objects",
                details: ["limit": .int(limits.maxObjects)])
        }
        if let className {
            try Names.checkID(className, "class name")
            guard classes[className] != nil else { throw CoreError.notFound("class", className) }
        }
        let id = id ?? newObjectID()
        // Check every value against a provisional object, so the checks see its class.
        objects[id] = StoredObject(id: id, className: className, revision: 0, createdAt: now, values: [:])
        do throws(CoreError) {
            for (key, value) in values {
                guard Names.isValidKey(key) else {
                    throw CoreError(.invalidKeyPath, "'\(key)' is not a valid key", details: ["key": .string(key)])
                }
                try checkAssignable(value, to: WriteTarget(objectID: id, inner: [], key: key))
            }
        } catch {
            objects[id] = nil
            throw error
        }
        let revision = nextRevision()
        let object = StoredObject(id: id, className: className, revision: revision, createdAt: now, values: values)
        objects[id] = object
        journal.mark(.object, id)
        objectIDs.insert(id)
        if let className { objectIDsByClass[className, default: SortedIDs()].insert(id) }
        let created = snapshot(object)
        appendAdmin("objectCreated", ["object": .object(created.json), "revision": .int(revision)])
        // References to this id that dangled (the object was deleted) read it again.
        propagate([Write(location: ObjectPath(objectID: id, keys: []), policy: .onChange)], revision: revision)
        return created
    }

    func listObjects(className: String?, limit: Int, after cursor: String?) throws(CoreError) -> ObjectPage {
        let ids: SortedIDs
        if let className {
            guard classes[className] != nil else { throw CoreError.notFound("class", className) }
            ids = objectIDsByClass[className] ?? SortedIDs()
        } else {
            ids = objectIDs
        }
        let page = ids.page(after: cursor, limit: limit)
        let snapshots = page.ids.compactMap { objects[$0].map { snapshot($0) } }  // retainedBy included
        return ObjectPage(objects: snapshots, next: page.more ? page.ids.last : nil)
    }

    /// Deletes an object (section 6.4), or, while an observer retains it, marks it
    /// `releasePending` (6.5): it is deleted when the last retaining observer lets go.
    mutating func deleteObject(_ id: String) throws(CoreError) -> DeleteOutcome {
        _ = try existingObject(id)
        let retainedBy = retainers(of: id)
        if !retainedBy.isEmpty {
            if pendingRelease.contains(id) { return .releasePending(retainedBy: retainedBy, revision: nil) }
            let revision = nextRevision()
            pendingRelease.insert(id)
            journal.mark(.object, id)
            appendAdmin(
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

    /// Removes an object now: its registrations are cancelled (`objectDeleted`), and
    /// registrations that reach it through references see their value become `null`.
    mutating func removeObject(_ id: String, revision: Int) {
        guard let object = objects[id] else { return }
        let rooted = (registrationsByObject[id] ?? []).compactMap { registrations[$0] }.sorted {
            $0.sequence < $1.sequence
        }
        for registration in rooted { removeRegistration(registration, reason: "objectDeleted", revision: revision) }
        objects[id] = nil
        pendingRelease.remove(id)
        journal.mark(.object, id)
        objectIDs.remove(id)
        if let className = object.className {
            objectIDsByClass[className]?.remove(id)
            if objectIDsByClass[className]?.count == 0 { objectIDsByClass[className] = nil }
        }
        propagate([Write(location: ObjectPath(objectID: id, keys: []), policy: .onChange)], revision: revision)
        appendAdmin("objectDeleted", ["object": .string(id), "revision": .int(revision)])
    }

    /// A fresh server-generated id (`obj_` and 16 hex digits), unused so far.
    func newObjectID() -> String {
        while true {
            let candidate = "obj_" + String(UInt64.random(in: 1...UInt64.max), radix: 16)
            if objects[candidate] == nil { return candidate }
        }
    }
}
