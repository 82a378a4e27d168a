// MARK: - Classes

extension ObjectGraph {
    /// The class `name` would be after `definition`, checked against the whole catalogue.
    ///
    /// Refused (400) when the definition is invalid, its key paths do not resolve or computed
    /// values form a cycle; refused (409) when existing objects of the class, or other classes'
    /// computed key paths, break under it. Other classes are checked in name order, so the
    /// same refusal names the same class on every replica.
    func checkedClass(_ name: String, definition: JSON) throws(CoreError) -> ClassSchema {
        let schema = try ClassSchema(name: name, definition: definition)
        var prospective = classes
        prospective[name] = ClassRecord(schema: schema, revision: 0)
        let checker = KeyPathChecker { prospective[$0]?.schema }
        try checker.checkDefinitions(of: schema)
        for other in prospective.keys.sorted() where other != name {
            guard let otherSchema = prospective[other]?.schema else { continue }
            do {
                try checker.checkDefinitions(of: otherSchema)
            } catch {
                throw CoreError(.conflict, "class \(other) would break: \(error.message)")
            }
        }
        for id in objectIDsByClass[name]?.page(after: nil, limit: .max).ids ?? [] {
            guard let object = objects[id] else { continue }
            for (key, value) in object.values {
                guard let spec = schema.properties[key], spec.computed == nil, spec.type.accepts(value) else {
                    throw CoreError(
                        .conflict, "object '\(id)' has a value for '\(key)' that the new definition refuses",
                        details: ["object": .string(id), "key": .string(key)])
                }
            }
        }
        return schema
    }

    /// The objects of class `name`; refuses (409) deleting a class that objects use.
    func checkDeletable(_ name: String) throws(CoreError) {
        guard classes[name] != nil else { throw CoreError.notFound("class", name) }
        let users = objectIDsByClass[name]?.count ?? 0
        guard users == 0 else {
            throw CoreError(.conflict, "class \(name) is used by \(users) object(s)", details: ["objects": .int(users)])
        }
    }

    /// `reader`: its count is of the objects it may read (section 13), counted one by one.
    func classSnapshot(_ name: String, reader: ReadFilter?) -> ClassSnapshot? {
        classes[name].map {
            let ids = objectIDsByClass[name] ?? SortedIDs()
            var count = ids.count
            if let reader {
                count = ids.page(after: nil, limit: .max).ids.count { id in
                    objects[id].map { reader.mayRead(identity(of: $0)) } ?? false
                }
            }
            return ClassSnapshot(schema: $0.schema, revision: $0.revision, objectCount: count)
        }
    }
}
