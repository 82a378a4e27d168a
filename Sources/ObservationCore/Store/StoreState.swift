/// Everything the store holds. Not thread-safe by itself: `Store` keeps it
/// behind its one lock (`Locked`), and every method here runs under that lock.
///
/// Methods either succeed completely or throw before changing anything.
struct StoreState: Sendable {
    struct ClassRecord: Sendable {
        var schema: ClassSchema
        var revision: Int
    }

    /// The global revision: the last one a successful change took.
    var revision = 0
    var classes: [String: ClassRecord] = [:]
    var objects: [String: StoredObject] = [:]
    /// All object ids, sorted (paging).
    var objectIDs = SortedIDs()
    /// Object ids per class name, sorted (paging by class, class deletion and replacement).
    var objectIDsByClass: [String: SortedIDs] = [:]
    var limits: StoreLimits

    init(limits: StoreLimits) {
        self.limits = limits
    }

    /// Takes the next revision.
    mutating func nextRevision() -> Int {
        revision += 1
        return revision
    }

    var checker: KeyPathChecker {
        KeyPathChecker { [classes] name in classes[name]?.schema }
    }

    func schema(of object: StoredObject) -> ClassSchema? {
        object.className.flatMap { classes[$0]?.schema }
    }

    func existingObject(_ id: String) throws(CoreError) -> StoredObject {
        guard let object = objects[id] else { throw CoreError.notFound("object", id) }
        return object
    }

    func checkRevision(_ object: StoredObject, _ expected: Int?) throws(CoreError) {
        if let expected, expected != object.revision {
            throw CoreError(
                .revisionMismatch, "object '\(object.id)' is at revision \(object.revision), not \(expected)",
                details: ["revision": .int(object.revision), "expected": .int(expected)])
        }
    }
}
