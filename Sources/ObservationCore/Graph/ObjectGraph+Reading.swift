// MARK: - Key-value coding: reads

extension ObjectGraph {
    /// Where a walk stands: on a stored object (values and computed keys), or on a plain
    /// JSON value, with the place it is stored at when it is one (for dependency tracing).
    enum Node {
        case object(String)
        case value(JSON, at: ObjectPath?)

        var json: JSON {
            switch self {
            case .object(let id): .reference(id)
            case .value(let value, _): value
            }
        }

        var location: ObjectPath? {
            if case .value(_, let location) = self { return location }
            return nil
        }
    }

    /// Computed values may read other computed values through references; past
    /// this depth the walk is taken for a cycle and refused.
    static let maxComputedDepth = 32

    /// `valueForKeyPath:` on object `id`; `trace`, when given, collects the places read.
    func read(_ path: KeyPath, of id: String, trace: DependencyTrace? = nil, filter: ReadFilter? = nil)
        throws(CoreError) -> JSON
    {
        // An object the reader may not read is missing to it, from the first step on.
        if let filter, let object = objects[id], !filter.mayRead(identity(of: object)) { return .null }
        return try evaluate(path.components[...], from: .object(id), depth: 0, trace: trace, filter: filter)
    }

    /// What scopes match an object by (section 13): fixed for as long as it exists.
    func identity(of object: StoredObject) -> ObjectIdentity {
        ObjectIdentity(id: object.id, className: object.className, ownerToken: object.ownerToken)
    }

    /// Whether `filter` lets its reader see object `id` (nil: no filter; a missing object is not seen).
    func isVisible(_ id: String, to filter: ReadFilter?) -> Bool {
        guard let object = objects[id] else { return false }
        return filter?.mayRead(identity(of: object)) ?? true
    }

    /// The node for a value stored at `location`: references to existing objects
    /// become object nodes; dangling ones (the object was deleted) read as `null`.
    func node(_ value: JSON, at location: ObjectPath?, trace: DependencyTrace?, filter: ReadFilter?) -> Node {
        guard let id = value.referencedID else { return .value(value, at: location) }
        trace?.record(location)
        trace?.record(ObjectPath(objectID: id, keys: []))  // revived or deleted, the value changes
        return isVisible(id, to: filter) ? .object(id) : .value(.null, at: nil)
    }

    func evaluate(
        _ components: ArraySlice<KeyPath.Component>, from start: Node, depth: Int, trace: DependencyTrace? = nil,
        filter: ReadFilter? = nil
    ) throws(CoreError) -> JSON {
        var current = start
        var index = components.startIndex
        while index < components.endIndex {
            switch components[index] {
            case .collection(let op):
                trace?.record(current.location)
                let result = try aggregate(
                    op, over: current.json, then: components[(index + 1)...], depth: depth, trace: trace, filter: filter
                )
                trace?.valueLocation = nil
                return result
            case .key(let key):
                switch current {
                case .object(let id):
                    let (value, stored) = try member(key, of: id, depth: depth, trace: trace, filter: filter)
                    current = node(
                        value, at: stored ? ObjectPath(objectID: id, keys: [key]) : nil, trace: trace, filter: filter)
                case .value(.object(let members), let location):
                    current = node(members[key] ?? .null, at: location?.appending(key), trace: trace, filter: filter)
                case .value(.array(let elements), let location):
                    trace?.record(location)
                    var mapped: [JSON] = []
                    mapped.reserveCapacity(elements.count)
                    for element in elements {
                        let start = node(element, at: nil, trace: trace, filter: filter)
                        mapped.append(
                            try evaluate(components[index...], from: start, depth: depth, trace: trace, filter: filter))
                    }
                    trace?.valueLocation = nil  // a mapped array is stored nowhere
                    return .array(mapped)
                case .value(_, let location):
                    trace?.record(location)
                    trace?.valueLocation = nil
                    return .null
                }
            }
            index += 1
        }
        trace?.record(current.location)
        trace?.valueLocation = current.location  // the outermost walk finishes last, so its answer stands
        return current.json
    }

    /// The value of `key` on object `id`, and whether it is stored (not computed).
    func member(_ key: String, of id: String, depth: Int, trace: DependencyTrace? = nil, filter: ReadFilter? = nil)
        throws(CoreError) -> (
            JSON, Bool
        )
    {
        guard let object = objects[id] else { return (.null, false) }
        if let spec = schema(of: object)?.properties[key], let computed = spec.computed {
            for path in spec.dependsOn {
                _ = try? evaluate(
                    path.components[...], from: .object(id), depth: depth + 1, trace: trace, filter: filter)
            }
            return (try evaluate(computed, on: id, depth: depth + 1, trace: trace, filter: filter), false)
        }
        return (object.values[key] ?? .null, true)
    }

    func evaluate(
        _ computed: Computed, on id: String, depth: Int, trace: DependencyTrace? = nil, filter: ReadFilter? = nil
    ) throws(CoreError)
        -> JSON
    {
        guard depth <= Self.maxComputedDepth else {
            throw CoreError(
                .invalidKeyPath,
                "computed values nest deeper than \(Self.maxComputedDepth) (a cycle through references?)")
        }
        switch computed {
        case .keyPath(let path):
            return try evaluate(path.components[...], from: .object(id), depth: depth, trace: trace, filter: filter)
        case .template(let parts, _):
            var text = ""
            for part in parts {
                switch part {
                case .literal(let literal): text += literal
                case .keyPath(let path):
                    text += Self.text(
                        of: try evaluate(
                            path.components[...], from: .object(id), depth: depth, trace: trace, filter: filter))
                }
            }
            return .string(text)
        }
    }

    /// How a value reads inside a template: strings as they are, `null` as nothing, the rest as JSON.
    static func text(of value: JSON) -> String {
        switch value {
        case .null: ""
        case .string(let text): text
        default: value.description
        }
    }

    /// Snapshot of an object: stored values in order, every class property, then computed ones.
    /// `retainedBy`: the observers that keep it alive (the graph does not know them).
    func snapshot(_ object: StoredObject, retainedBy: [String], filter: ReadFilter? = nil) -> ObjectSnapshot {
        var values = JSONObject()
        if let schema = schema(of: object) {
            for name in schema.propertyNames {
                if let computed = schema.properties[name]?.computed {
                    values[name] = (try? evaluate(computed, on: object.id, depth: 1, filter: filter)) ?? .null
                } else {
                    values[name] = readable(object.values[name] ?? .null, filter: filter)
                }
            }
        } else {
            for (key, value) in object.values { values[key] = readable(value, filter: filter) }
        }
        var snapshot = ObjectSnapshot(
            id: object.id, className: object.className, revision: object.revision,
            createdAt: object.createdAt, values: values, retainedBy: retainedBy)
        snapshot.owner = object.owner
        return snapshot
    }

    /// A stored value as reads show it: a dangling reference at the top reads as `null`, as
    /// does one to an object the reader may not read.
    func readable(_ value: JSON, filter: ReadFilter? = nil) -> JSON {
        if let id = value.referencedID, !isVisible(id, to: filter) { return .null }
        return value
    }
}
