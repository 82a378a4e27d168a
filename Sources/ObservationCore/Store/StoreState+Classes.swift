// MARK: - Classes: define (create or replace) and delete

extension StoreState {
    /// Creates or replaces a class. Returns its snapshot and whether it is new. Replacing
    /// does not notify observations (computed values are read anew at the next change);
    /// queries that may read its objects are evaluated again, and told what changed.
    mutating func defineClass(_ name: String, definition: JSON) throws(CoreError) -> (ClassSnapshot, created: Bool) {
        let schema = try graph.checkedClass(name, definition: definition)
        let created = graph.classes[name] == nil
        let revision = nextRevision()
        graph.classes[name] = ObjectGraph.ClassRecord(schema: schema, revision: revision)
        journal.mark(.class, name)
        if !created { reevaluateQueries(ofClass: name, revision: revision) }
        return (
            ClassSnapshot(schema: schema, revision: revision, objectCount: graph.objectIDsByClass[name]?.count ?? 0),
            created
        )
    }

    mutating func deleteClass(_ name: String) throws(CoreError) -> Int {
        try graph.checkDeletable(name)
        let revision = nextRevision()
        graph.classes[name] = nil
        journal.mark(.class, name)
        return revision
    }
}
