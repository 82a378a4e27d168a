// MARK: - Key-value coding: reads

extension StoreState {
    /// Where a walk stands: on a stored object (values and computed keys), or on a plain JSON value.
    enum Node {
        case object(String)
        case value(JSON)

        var json: JSON {
            switch self {
            case .object(let id): .reference(id)
            case .value(let value): value
            }
        }
    }

    /// Computed values may read other computed values through references; past
    /// this depth the walk is taken for a cycle and refused.
    static let maxComputedDepth = 32

    /// `valueForKeyPath:` on object `id`.
    func read(_ path: KeyPath, of id: String) throws(CoreError) -> JSON {
        try evaluate(path.components[...], from: .object(id), depth: 0)
    }

    /// A JSON value where references to existing objects become object nodes
    /// and dangling references (their object was deleted) read as `null`.
    func node(_ value: JSON) -> Node {
        guard let id = value.referencedID else { return .value(value) }
        return objects[id] == nil ? .value(.null) : .object(id)
    }

    func evaluate(_ components: ArraySlice<KeyPath.Component>, from start: Node, depth: Int) throws(CoreError) -> JSON {
        var current = start
        var index = components.startIndex
        while index < components.endIndex {
            switch components[index] {
            case .collection(let op):
                return try aggregate(op, over: current.json, then: components[(index + 1)...], depth: depth)
            case .key(let key):
                switch current {
                case .object(let id):
                    current = node(try member(key, of: id, depth: depth))
                case .value(.object(let members)):
                    current = node(members[key] ?? .null)
                case .value(.array(let elements)):
                    var mapped: [JSON] = []
                    mapped.reserveCapacity(elements.count)
                    for element in elements {
                        mapped.append(try evaluate(components[index...], from: node(element), depth: depth))
                    }
                    return .array(mapped)
                case .value:
                    return .null
                }
            }
            index += 1
        }
        return current.json
    }

    /// The value of `key` on object `id`: stored, or computed when its class says so.
    func member(_ key: String, of id: String, depth: Int) throws(CoreError) -> JSON {
        guard let object = objects[id] else { return .null }
        if let computed = schema(of: object)?.properties[key]?.computed {
            return try evaluate(computed, on: id, depth: depth + 1)
        }
        return object.values[key] ?? .null
    }

    func evaluate(_ computed: Computed, on id: String, depth: Int) throws(CoreError) -> JSON {
        guard depth <= Self.maxComputedDepth else {
            throw CoreError(
                .invalidKeyPath,
                "computed values nest deeper than \(Self.maxComputedDepth) (a cycle through references?)")
        }
        switch computed {
        case .keyPath(let path):
            return try evaluate(path.components[...], from: .object(id), depth: depth)
        case .template(let parts, _):
            var text = ""
            for part in parts {
                switch part {
                case .literal(let literal): text += literal
                case .keyPath(let path):
                    text += Self.text(of: try evaluate(path.components[...], from: .object(id), depth: depth))
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
    func snapshot(_ object: StoredObject, retainedBy: [String] = []) -> ObjectSnapshot {
        var values = JSONObject()
        if let schema = schema(of: object) {
            for name in schema.propertyNames {
                if let computed = schema.properties[name]?.computed {
                    values[name] = (try? evaluate(computed, on: object.id, depth: 1)) ?? .null
                } else {
                    values[name] = readable(object.values[name] ?? .null)
                }
            }
        } else {
            for (key, value) in object.values { values[key] = readable(value) }
        }
        return ObjectSnapshot(
            id: object.id, className: object.className, revision: object.revision,
            createdAt: object.createdAt, values: values, retainedBy: retainedBy)
    }

    /// A stored value as reads show it: a dangling reference at the top reads as `null`.
    func readable(_ value: JSON) -> JSON {
        if let id = value.referencedID, objects[id] == nil { return .null }
        return value
    }
}
