// MARK: - Classes

extension StoreState {
    /// Creates or replaces a class. Returns its snapshot and whether it is new.
    ///
    /// Refused (400) when the definition is invalid, its key paths do not
    /// resolve or computed values form a cycle; refused (409) when existing
    /// objects of the class, or other classes' computed key paths, break under it.
    mutating func defineClass(_ name: String, definition: JSON) throws(CoreError) -> (ClassSnapshot, created: Bool) {
        let schema = try ClassSchema(name: name, definition: definition)
        var prospective = classes
        prospective[name] = ClassRecord(schema: schema, revision: 0)
        let checker = KeyPathChecker { prospective[$0]?.schema }
        try checker.checkDefinitions(of: schema)
        for other in prospective.values where other.schema.name != name {
            do {
                try checker.checkDefinitions(of: other.schema)
            } catch {
                throw CoreError(.conflict, "class \(other.schema.name) would break: \(error.message)")
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
        let created = classes[name] == nil
        let revision = nextRevision()
        classes[name] = ClassRecord(schema: schema, revision: revision)
        journal.mark(.class, name)
        return (
            ClassSnapshot(schema: schema, revision: revision, objectCount: objectIDsByClass[name]?.count ?? 0), created
        )
    }

    func classSnapshot(_ name: String) -> ClassSnapshot? {
        classes[name].map {
            ClassSnapshot(schema: $0.schema, revision: $0.revision, objectCount: objectIDsByClass[name]?.count ?? 0)
        }
    }

    mutating func deleteClass(_ name: String) throws(CoreError) -> Int {
        guard classes[name] != nil else { throw CoreError.notFound("class", name) }
        let users = objectIDsByClass[name]?.count ?? 0
        guard users == 0 else {
            throw CoreError(.conflict, "class \(name) is used by \(users) object(s)", details: ["objects": .int(users)])
        }
        let revision = nextRevision()
        classes[name] = nil
        journal.mark(.class, name)
        return revision
    }
}
