// MARK: - Classes, objects and values (KVC)

extension StoreSession {
    /// Creates or replaces the class `name` from `{"properties": {...}}`.
    public func defineClass(_ name: String, definition: JSON) throws(CoreError) -> (ClassSnapshot, created: Bool) {
        expected(try issue(.defineClass(name: name, definition: definition))) {
            if case .classDefined(let snapshot, let created) = $0 { (snapshot, created) } else { nil }
        }
    }

    /// Every class, with object counts of what the caller may read.
    public func classes() throws(CoreError) -> [ClassSnapshot] {
        try read { state, reader in
            state.graph.classes.keys.sorted().compactMap { state.graph.classSnapshot($0, reader: reader.filter) }
        }
    }

    public func classInfo(_ name: String) throws(CoreError) -> ClassSnapshot {
        guard let snapshot = try read({ state, reader in state.graph.classSnapshot(name, reader: reader.filter) })
        else {
            throw CoreError.notFound("class", name)
        }
        return snapshot
    }

    /// Deletes a class no object uses; returns the revision.
    public func deleteClass(_ name: String) throws(CoreError) -> Int {
        expected(try issue(.deleteClass(name: name))) { if case .removed(let revision?) = $0 { revision } else { nil } }
    }

    /// Creates an object (with a generated id when `id` is nil).
    public func createObject(id: String?, className: String?, values: JSONObject) throws(CoreError) -> ObjectSnapshot {
        expected(
            try issue(.createObject(id: id, className: className, values: values, generatedID: RandomID.make("obj_")))
        ) {
            if case .objectCreated(let snapshot) = $0 { snapshot } else { nil }
        }
    }

    /// Objects in id order, `limit` at a time, after the cursor `after`; only those the caller
    /// may read (section 13: the others are not there, for pages and cursors alike).
    public func objects(className: String?, limit: Int, after cursor: String?) throws(CoreError) -> ObjectPage {
        try read { state, reader throws(CoreError) in
            try state.listObjects(className: className, limit: limit, after: cursor, reader: reader.filter)
        }
    }

    /// One object as the caller may see it: 403 for one it may not read, or for a missing one
    /// it could never read (so that refusals tell nothing of what exists).
    public func object(_ id: String) throws(CoreError) -> ObjectSnapshot {
        try read { state, reader throws(CoreError) in
            state.snapshot(try state.readableObject(id, reader), filter: reader.filter)
        }
    }

    /// Sets several keys atomically under one revision; returns it.
    public func patch(_ id: String, values: JSONObject, ifRevision: Int? = nil) throws(CoreError) -> Int {
        revision(of: try issue(.patch(object: id, values: values, ifRevision: ifRevision)))
    }

    /// Deletes an object, or marks it `releasePending` while observers retain it.
    public func deleteObject(_ id: String) throws(CoreError) -> DeleteOutcome {
        expected(try issue(.deleteObject(object: id))) {
            if case .objectDeleted(let outcome) = $0 { outcome } else { nil }
        }
    }

    /// `valueForKeyPath:`; also returns the object's revision.
    public func value(of id: String, at keyPath: String) throws(CoreError) -> (value: JSON, revision: Int) {
        let path = try KeyPath(keyPath)
        return try read { state, reader throws(CoreError) in
            let object = try state.readableObject(id, reader)
            try state.graph.checker.check(path, from: object.className)
            return (try state.graph.read(path, of: id, filter: reader.filter), object.revision)
        }
    }

    /// `setValue:forKeyPath:`; returns the new revision.
    public func setValue(_ value: JSON, of id: String, at keyPath: String, ifRevision: Int? = nil) throws(CoreError)
        -> Int
    {
        revision(of: try issue(.setValue(object: id, keyPath: keyPath, value: value, ifRevision: ifRevision)))
    }

    /// Applies a to-many mutation to the array at `keyPath`; returns the new revision.
    public func mutate(_ id: String, at keyPath: String, _ mutation: ArrayMutation, ifRevision: Int? = nil)
        throws(CoreError) -> Int
    {
        revision(
            of: try issue(
                .mutate(
                    object: id, keyPath: keyPath, kind: mutation.kind.rawValue, indexes: mutation.indexes,
                    values: mutation.values, ifRevision: ifRevision)))
    }

    /// `didChangeValueForKey:` (for `manual` keys): one record per registration on those key
    /// paths, `old` being the value at its last notification.
    public func notify(_ id: String, keyPaths: [String]) throws(CoreError) -> Int {
        revision(of: try issue(.notify(object: id, keyPaths: keyPaths)))
    }

    func revision(of outcome: Outcome) -> Int {
        expected(outcome) { if case .revision(let revision) = $0 { revision } else { nil } }
    }
}
