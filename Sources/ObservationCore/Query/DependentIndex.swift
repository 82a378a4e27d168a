/// Ids by object, then by the top-level key they read ("" for the object's existence): the
/// query book's subjects by the places their evaluations read.
struct DependentIndex: Sendable {
    private(set) var table: [String: [String: Set<String>]] = [:]

    mutating func add(_ id: String, at path: ObjectPath) {
        table[path.objectID, default: [:]][path.keys.first ?? "", default: []].insert(id)
    }

    mutating func remove(_ id: String, at path: ObjectPath) {
        let key = path.keys.first ?? ""
        table[path.objectID]?[key]?.remove(id)
        if table[path.objectID]?[key]?.isEmpty == true { table[path.objectID]?[key] = nil }
        if table[path.objectID]?.isEmpty == true { table[path.objectID] = nil }
    }
}
