/// A place inside a stored object: a top-level key and the plain-JSON keys below it.
///
/// Registrations depend on the places their key path read; a write to a place
/// affects every registration that read it, a place inside it, or one containing it.
/// The empty path stands for the whole object (its creation or deletion).
struct ObjectPath: Hashable, Sendable {
    let objectID: String
    var keys: [String]

    /// Whether a write at `self` changes what a read at `other` saw (one is a prefix of the other).
    func overlaps(_ other: ObjectPath) -> Bool {
        guard objectID == other.objectID else { return false }
        return keys.count <= other.keys.count
            ? other.keys.starts(with: keys) : keys.starts(with: other.keys)
    }

    func appending(_ key: String) -> ObjectPath { ObjectPath(objectID: objectID, keys: keys + [key]) }
}

/// What one evaluation of a key path read: the places it depends on, and where its value
/// lives when it is a stored value (the target of a to-many mutation).
final class DependencyTrace {
    private(set) var paths: Set<ObjectPath> = []
    var valueLocation: ObjectPath?

    func record(_ path: ObjectPath?) {
        if let path { paths.insert(path) }
    }
}
