// MARK: - Key-value coding: writes

/// Where a write lands: the key `key` of the plain JSON object at `inner`
/// inside object `objectID` (an empty `inner` means a top-level key).
struct WriteTarget {
    let objectID: String
    let inner: [String]
    let key: String

    /// The keys from the object to the place written: `inner`, then `key`.
    var keys: [String] { inner.isEmpty ? [key] : inner + [key] }
}

extension ObjectGraph {
    /// Where `value` goes when it is set at `path` from object `id` (at revision `ifRevision`,
    /// when given), checked as `writeTarget` and `checkAssignable` check it. The object is
    /// looked up once for all of it, and let go before the caller stores (held across the
    /// store, its values would be copied). `position`: where the target's object is in
    /// `objects` when it is `id` itself (valid until an object is added or removed), so that
    /// storing and propagating need not look it up again.
    mutating func checkedTarget(_ value: JSON, at path: KeyPath, of id: String, ifRevision: Int?) throws(CoreError)
        -> (target: WriteTarget, position: ObjectPosition?)
    {
        guard let position = objects.index(forKey: id) else { throw CoreError.notFound("object", id) }
        let (revision, className) = header(at: position)
        try checkRevision(of: id, at: revision, ifRevision)
        let target = try writeTarget(path, objectID: id, className: className)
        guard target.objectID == id else {
            try checkAssignable(value, to: target)
            return (target, nil)
        }
        try checkAssignable(value, to: target, className: className)
        return (target, position)
    }

    /// The revision and class of the object at `position`, read where it is: read through the
    /// dictionary's getter, an object is copied whole, each of its fields retained and released
    /// (`mutating` only for the in-place access, as `Dictionary.inPlace`).
    mutating func header(at position: ObjectPosition) -> (revision: Int, className: String?) {
        Self.header(of: &objects.values[position])
    }

    private static func header(of object: inout StoredObject) -> (revision: Int, className: String?) {
        (object.revision, object.className)
    }

    /// Where a write to `path` from object `id` lands (at revision `ifRevision`, when given).
    func writeTarget(_ path: KeyPath, of id: String, ifRevision: Int?) throws(CoreError) -> WriteTarget {
        let object = try existingObject(id)
        try checkRevision(object, ifRevision)
        return try writeTarget(path, from: object)
    }

    /// Finds where `setValue:forKeyPath:` writes: every link but the last must
    /// be a plain JSON object or a reference; nothing is created on the way.
    func writeTarget(_ path: KeyPath, from object: StoredObject) throws(CoreError) -> WriteTarget {
        try writeTarget(path, objectID: object.id, className: object.className)
    }

    /// `writeTarget(_:from:)` from the object `id` of class `className`.
    func writeTarget(_ path: KeyPath, objectID id: String, className: String?) throws(CoreError) -> WriteTarget {
        // Every component a key (read in place: a write's path is not copied into an array).
        guard !path.hasCollectionOperator, case .key(let last)? = path.components.last else {
            throw CoreError(.invalidKeyPath, "'\(path)' uses a collection operator; it can be read, not set")
        }
        try checker.check(path, from: className)
        var targetID = id
        var inner: [String] = []
        var walked: [String] = []
        for case .key(let key) in path.components.dropLast() {
            walked.append(key)
            if inner.isEmpty,
                schema(ofClass: targetID == id ? className : objects[targetID]?.className)?
                    .properties[key]?.computed != nil
            {
                throw CoreError(
                    .readOnly, "'\(walked.joined(separator: "."))' is computed; nothing can be set through it")
            }
            let value = stored(targetID, inner + [key])
            if let referenced = value.referencedID {
                guard objects[referenced] != nil else {
                    throw CoreError(.invalidKeyPath, "'\(walked.joined(separator: "."))' refers to a deleted object")
                }
                targetID = referenced
                inner = []
            } else if case .object = value {
                inner.append(key)
            } else {
                throw CoreError(
                    .invalidKeyPath,
                    "'\(walked.joined(separator: "."))' is \(value.isNull ? "null" : value.typeNameWithArticle), not an object; "
                        + "intermediate objects are not created implicitly")
            }
        }
        return WriteTarget(objectID: targetID, inner: inner, key: last)
    }

    /// Checks that `value` may be stored at `target`: the key exists in the
    /// object's class, is not computed, and the value has the declared type.
    func checkAssignable(_ value: JSON, to target: WriteTarget) throws(CoreError) {
        guard let object = objects[target.objectID] else { throw CoreError.notFound("object", target.objectID) }
        try checkAssignable(value, to: target, in: object)
    }

    /// `checkAssignable(_:to:)` for the target's object, which the caller has at hand (passed
    /// borrowed: no copy of its fields).
    func checkAssignable(_ value: JSON, to target: WriteTarget, in object: StoredObject) throws(CoreError) {
        try checkAssignable(value, to: target, className: object.className)
    }

    /// `checkAssignable(_:to:)` for a target whose object is of class `className`.
    func checkAssignable(_ value: JSON, to target: WriteTarget, className: String?) throws(CoreError) {
        var type: PropertyType?
        if target.inner.isEmpty, let schema = schema(ofClass: className) {
            guard let spec = schema.properties[target.key] else {
                throw CoreError.unknownKey(target.key, in: schema.name, candidates: schema.storedNames)
            }
            guard spec.computed == nil else {
                throw CoreError(.readOnly, "'\(target.key)' of \(schema.name) is computed and read-only")
            }
            guard spec.type.accepts(value) else {
                throw CoreError(
                    .typeMismatch,
                    "'\(target.key)' of \(schema.name) is \(withArticle(spec.type.name)), not \(value.typeNameWithArticle)",
                    details: ["expected": .object(spec.type.json), "got": .string(value.typeName)])
            }
            type = spec.type
        }
        try checkReferences(in: value, as: type, at: target.key)
    }

    /// Every `$ref` inside `value` names an existing object (of the declared class, when `type` names one),
    /// and no other object uses the reserved member `$ref`.
    func checkReferences(in value: JSON, as type: PropertyType?, at key: String) throws(CoreError) {
        switch value {
        case .object(let members):
            if let id = value.referencedID {
                guard let target = objects[id] else {
                    throw CoreError(
                        .notFound, "'\(key)' refers to object '\(id)', which does not exist",
                        details: ["object": .string(id)])
                }
                if case .ref(let className?)? = type, target.className != className {
                    throw CoreError(
                        .typeMismatch,
                        "'\(key)' must refer to \(withArticle(className)), and '\(id)' is \(withArticle(target.className ?? "plain object"))"
                    )
                }
            } else {
                if members["$ref"] != nil {
                    throw CoreError(.invalidRequest, "'\(key)': a reference is exactly {\"$ref\": \"object-id\"}")
                }
                for (member, inner) in members { try checkReferences(in: inner, as: nil, at: member) }
            }
        case .array(let elements):
            var itemType: PropertyType?
            if case .array(let items)? = type { itemType = items }
            for element in elements { try checkReferences(in: element, as: itemType, at: key) }
        default:
            break
        }
    }

    /// The stored (never computed) value at `path` inside object `id`, through plain objects; `null` when absent.
    func stored(_ id: String, _ path: [String]) -> JSON {
        guard let first = path.first, var value = objects[id]?.values[first] else { return .null }
        for step in path.dropFirst() {
            guard case .object(let members) = value else { return .null }
            value = members[step] ?? .null
        }
        return value
    }

    func storedValue(at target: WriteTarget) -> JSON { stored(target.objectID, target.keys) }

    /// Stores `value` at `target` (already checked) under `revision`.
    mutating func store(_ value: JSON, at target: WriteTarget, revision: Int, position known: ObjectPosition? = nil) {
        // The id looked up once (or not at all, when the caller knows where it is): through
        // `objects[id]?`, each statement hashes it again.
        assert(known.map { objects.keys[$0] == target.objectID } ?? true, "a stale position for \(target.objectID)")
        guard let position = known ?? objects.index(forKey: target.objectID) else { return }
        objects.values[position].values.assign(value, at: target.inner[...], key: target.key)
        objects.values[position].revision = revision
    }
}

extension JSONObject {
    /// Sets `key` in the plain object reached through `path` (whose links exist and are objects).
    mutating func assign(_ value: JSON, at path: ArraySlice<String>, key: String) {
        guard let first = path.first else {
            self[key] = value
            return
        }
        _ = modify(first) { member in
            guard case .object(var nested) = member else { return }
            member = .null  // drop the second reference so `nested` is changed in place
            nested.assign(value, at: path.dropFirst(), key: key)
            member = .object(nested)
        }
    }
}
