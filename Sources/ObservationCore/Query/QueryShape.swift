/// One evaluation of a query definition, shared by every query registered with it (their
/// records differ only in query id, options and context): its window and `total`.
///
/// Two ways to keep it, chosen from the definition and the class:
/// - **direct**: a class, and every key path one stored key of a scalar type (string, number,
///   integer, boolean). A member's value before a write is what the write replaced, so
///   nothing is kept per member beyond the window: `total` moves by what each write changed,
///   and a window that lost members is refilled from the store's own ordered index (the
///   class's ids, or an `OrderIndex` shared by every shape of that class and `orderBy`).
/// - **traced** (any other: through references, computed keys, collection operators, no class):
///   every match in order (`TracedMembers`), and the places each object's evaluation read.
struct QueryShape: Sendable {
    /// A matching object: where it stands in the order, and its selected values.
    struct Member: Sendable, Equatable {
        var key: MemberKey
        var selected: [JSON]
    }

    let number: Int
    let definition: QueryDefinition
    let placement: QueryPlacement
    /// The queries that share it, in creation order.
    var queries: [String] = []
    /// The first `limit` matching objects with their selected values, as the last records left them.
    var window: [WindowMember] = []
    /// How many objects match.
    var total = 0
    /// Traced shapes: every match in order, and what evaluations read.
    var traced: TracedMembers?
    /// Direct shapes with `orderBy`: the order index they refill from (`OrderIndex.name`).
    let orderIndex: String?

    var order: MemberOrder { MemberOrder(descending: definition.order.map(\.descending)) }

    init(number: Int, definition: QueryDefinition, placement: QueryPlacement, direct: Bool) {
        self.number = number
        self.definition = definition
        self.placement = placement
        traced = direct ? nil : TracedMembers(order: MemberOrder(descending: definition.order.map(\.descending)))
        orderIndex = direct && !definition.order.isEmpty ? OrderIndex.name(of: definition) : nil
    }

    /// Whether a definition can be kept directly: see the type's comment.
    static func isDirect(_ definition: QueryDefinition, schema: ClassSchema?) -> Bool {
        guard let schema, definition.className != nil else { return false }
        return definition.keyPaths.allSatisfy { path in
            guard path.components.count == 1, case .key(let key) = path.components[0],
                let spec = schema.properties[key], spec.computed == nil
            else { return false }
            switch spec.type {
            case .string, .number, .integer, .boolean: return true
            default: return false
            }
        }
    }

    /// The window and total of the objects `ids` (the class's, in id order), evaluated once.
    mutating func evaluateAll(_ ids: [String], in graph: ObjectGraph, track: (String, Set<ObjectPath>) -> Void) {
        var members: [Member] = []
        for id in ids {
            let (member, places) = definition.evaluate(id, in: graph)
            if traced != nil {
                track(id, places)
                traced!.update(id, to: member, limit: definition.limit)
            } else if let member {
                members.append(member)
            }
        }
        if let traced {
            total = traced.count
            window = traced.window(definition.limit)
        } else {
            total = members.count
            let order = self.order
            window = members.sorted { order.precedes($0.key, $1.key) }.prefix(definition.limit).map {
                WindowMember(key: $0.key, selected: $0.selected)
            }
        }
    }
}

/// A member of a query's window as records show it: its place in the order (its id last) and
/// its selected values (in `select` order).
struct WindowMember: Sendable, Equatable {
    let key: MemberKey
    let selected: [JSON]

    var id: String { key.id }
}

/// A traced shape's matches: each with its place and selected values, in order; and the places
/// each object's evaluation read beyond its own stored keys.
struct TracedMembers: Sendable {
    var members: [String: QueryShape.Member] = [:]
    var ordered: OrderedMembers
    var tracked: [String: Set<ObjectPath>] = [:]

    init(order: MemberOrder) { ordered = OrderedMembers(order: order) }

    var count: Int { ordered.count }

    /// Whether `id`'s evaluation changed the window (its old or new place is in it).
    @discardableResult
    mutating func update(_ id: String, to member: QueryShape.Member?, limit: Int) -> Bool {
        let old = members[id]
        guard old != member else { return false }
        var touched = false
        if let old {
            touched = ordered.position(of: old.key, below: limit) != nil
            ordered.remove(old.key)
        }
        if let member {
            ordered.insert(member.key)
            touched = touched || ordered.position(of: member.key, below: limit) != nil
        }
        members[id] = member
        return touched
    }

    /// The first `limit` members.
    func window(_ limit: Int) -> [WindowMember] {
        ordered.prefix(limit).map { WindowMember(key: $0, selected: members[$0.id]?.selected ?? []) }
    }
}

/// Reads one object's values for a query: stored keys of its own directly, any other key
/// path through key-value coding; collects the places read beyond its own stored keys.
struct SubjectReader {
    let graph: ObjectGraph
    let values: JSONObject
    let object: StoredObject
    let schema: ClassSchema?
    /// What the reader may read: other objects along references read as `null`.
    let filter: ReadFilter?
    var places: Set<ObjectPath> = []

    /// `values`: the object's stored values to read (its values before a write, for a direct shape).
    init(graph: ObjectGraph, object: StoredObject, values: JSONObject? = nil, filter: ReadFilter? = nil) {
        self.filter = filter
        self.graph = graph
        self.object = object
        self.values = values ?? object.values
        schema = graph.schema(of: object)
    }

    mutating func read(_ path: KeyPath) -> JSON {
        if path.components.count == 1, case .key(let key) = path.components[0],
            schema?.properties[key]?.computed == nil
        {
            let value = values[key] ?? .null
            guard let target = value.referencedID else { return value }
            places.insert(ObjectPath(objectID: target, keys: []))  // a dangling reference reads as null
            return graph.isVisible(target, to: filter) ? value : .null
        }
        let trace = DependencyTrace()
        let value = (try? graph.read(path, of: object.id, trace: trace, filter: filter)) ?? .null
        places.formUnion(trace.paths)
        return value
    }
}

extension QueryDefinition {
    /// `id`'s membership: its place and selected values when it matches (nil when it does not,
    /// or is gone), and the places read beyond its own stored keys.
    func evaluate(_ id: String, in graph: ObjectGraph) -> (member: QueryShape.Member?, places: Set<ObjectPath>) {
        guard let object = graph.objects[id], className == nil || object.className == className,
            filter?.mayRead(graph.identity(of: object)) ?? true
        else {
            return (nil, [])
        }
        var reader = SubjectReader(graph: graph, object: object, filter: filter)
        // Conditions on one key of its own first: an object they refuse reads nothing elsewhere
        // (and is tracked nowhere).
        for condition in evaluationOrder where !condition.holds(for: reader.read(condition.path)) {
            return (nil, reader.places)
        }
        let values = order.map { SortValue(reader.read($0.path)) }
        let selected = select.map { reader.read($0) }
        return (QueryShape.Member(key: MemberKey(values: values, id: id), selected: selected), reader.places)
    }

    /// Whether stored `values` (a direct shape's object before a write) satisfy every condition.
    func matches(_ values: JSONObject) -> Bool {
        conditions.allSatisfy { condition in
            guard case .key(let key) = condition.path.components[0] else { return false }
            return condition.holds(for: values[key] ?? .null)
        }
    }

    /// The place in the order of an object with stored `values` (direct shapes).
    func key(of id: String, values: JSONObject) -> MemberKey {
        MemberKey(
            values: order.map { item in
                guard case .key(let key) = item.path.components[0] else { return .null }
                return SortValue(values[key] ?? .null)
            }, id: id)
    }
}
