/// Checks key paths against class definitions, without looking at any data.
///
/// This is what makes a typo fail at registration (`unknownKeyPath` with a
/// suggestion) rather than read as `null` forever. Objects without a class,
/// plain JSON values and references without a class accept any key.
struct KeyPathChecker {
    /// What is known statically about the value at some point of a walk.
    indirect enum Context {
        case classed(ClassSchema)
        case untyped
        case scalar(PropertyType, owner: String)
        case array(element: Context)
    }

    let schema: (String) -> ClassSchema?

    /// Throws unless `path` can be read from an object of class `className` (nil: no class).
    func check(_ path: KeyPath, from className: String?) throws(CoreError) {
        // Without a class every step is untyped, and an untyped walk accepts any path.
        guard className != nil else { return }
        _ = try context(after: path.components[...], from: start(className))
    }

    /// Every (class, computed key) that reading `path` evaluates.
    func computedKeys(read path: KeyPath, from className: String?) -> [(ClassSchema, String)] {
        var found: [(ClassSchema, String)] = []
        _ = try? context(after: path.components[...], from: start(className)) { schema, key in
            if schema.properties[key]?.computed != nil { found.append((schema, key)) }
        }
        return found
    }

    /// The property a path of plain keys ends on, when every step is known to a class.
    func finalProperty(of path: KeyPath, from className: String?) -> PropertySpec? {
        guard let keys = path.keys else { return nil }
        var context = start(className)
        var spec: PropertySpec?
        for key in keys {
            guard case .classed(let schema) = context, let next = schema.properties[key] else { return nil }
            spec = next
            context = self.context(for: next.type, owner: key)
        }
        return spec
    }

    func start(_ className: String?) -> Context {
        className.flatMap(schema).map(Context.classed) ?? .untyped
    }

    private func context(
        after components: ArraySlice<KeyPath.Component>, from start: Context,
        visit: (ClassSchema, String) -> Void = { _, _ in }
    ) throws(CoreError) -> Context {
        var current = start
        for (offset, component) in zip(components.indices, components) {
            switch component {
            case .key(let key):
                current = try step(current, key, visit)
            case .collection(let op):
                let element: Context
                switch current {
                case .array(let inner): element = inner
                case .untyped: element = .untyped
                case .classed(let schema):
                    throw CoreError(
                        .notACollection,
                        "@\(op.rawValue) needs a collection, and \(withArticle(schema.name)) is an object")
                case .scalar(let type, let owner):
                    throw CoreError(
                        .notACollection,
                        "@\(op.rawValue) needs a collection, and '\(owner)' is \(withArticle(type.name))")
                }
                _ = try context(after: components[(offset + 1)...], from: element, visit: visit)
                return .untyped
            }
        }
        return current
    }

    private func step(_ context: Context, _ key: String, _ visit: (ClassSchema, String) -> Void) throws(CoreError)
        -> Context
    {
        switch context {
        case .untyped:
            return .untyped
        case .array(let element):
            return .array(element: try step(element, key, visit))
        case .scalar(let type, let owner):
            throw CoreError(
                .unknownKeyPath, "'\(owner)' is \(withArticle(type.name)); it has no key '\(key)'",
                details: ["key": .string(key)])
        case .classed(let schema):
            guard let spec = schema.properties[key] else {
                throw CoreError.unknownKey(key, in: schema.name, candidates: schema.propertyNames)
            }
            visit(schema, key)
            return self.context(for: spec.type, owner: key)
        }
    }

    func context(for type: PropertyType, owner: String) -> Context {
        switch type {
        case .ref(let className?): schema(className).map(Context.classed) ?? .untyped
        case .ref(nil), .object, .any: .untyped
        case .array(let items): .array(element: items.map { context(for: $0, owner: owner) } ?? .untyped)
        case .string, .number, .integer, .boolean: .scalar(type, owner: owner)
        }
    }

    // MARK: - Class definitions

    /// Checks the computed definitions and `dependsOn` paths of `schema`, and
    /// that no computed property depends on itself, directly or through others.
    func checkDefinitions(of schema: ClassSchema) throws(CoreError) {
        for name in schema.propertyNames {
            guard let spec = schema.properties[name] else { continue }
            for path in (spec.computed?.keyPaths ?? []) + spec.dependsOn {
                do {
                    try check(path, from: schema.name)
                } catch {
                    throw CoreError(error.code, "computed '\(name)': \(error.message)", details: error.details)
                }
            }
            try checkAcyclic(schema, name, trail: [])
        }
    }

    private func checkAcyclic(_ schema: ClassSchema, _ key: String, trail: [String]) throws(CoreError) {
        let node = "\(schema.name).\(key)"
        if trail.contains(node) {
            throw CoreError(
                .invalidRequest, "computed values form a cycle: \((trail + [node]).joined(separator: " → "))")
        }
        guard let computed = schema.properties[key]?.computed else { return }
        for path in computed.keyPaths {
            for (next, nextKey) in computedKeys(read: path, from: schema.name) {
                try checkAcyclic(next, nextKey, trail: trail + [node])
            }
        }
    }
}
