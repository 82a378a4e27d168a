/// One evaluation of a query definition, shared by every query registered with it (their
/// records differ only in query id, options and context): the matching objects in order,
/// and the window the last records left.
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
    var members: [String: Member] = [:]
    var ordered: OrderedMembers
    /// The first `limit` members with their selected values, as the last records left them.
    var window: [WindowMember] = []
    /// The places each object's evaluation read through references or computed values
    /// (objects whose evaluation read only stored keys of their own are not here).
    var tracked: [String: Set<ObjectPath>] = [:]

    var total: Int { ordered.count }

    init(number: Int, definition: QueryDefinition, placement: QueryPlacement) {
        self.number = number
        self.definition = definition
        self.placement = placement
        ordered = OrderedMembers(order: MemberOrder(descending: definition.order.map(\.descending)))
    }

    /// Whether `id`'s evaluation changed the window (its old or new place is in it).
    mutating func update(_ id: String, to member: Member?) -> Bool {
        let old = members[id]
        guard old != member else { return false }
        let limit = definition.limit
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

    /// The window as the members stand now.
    func currentWindow() -> [WindowMember] {
        ordered.prefix(definition.limit).map { WindowMember(id: $0.id, selected: members[$0.id]?.selected ?? []) }
    }
}

/// Reads one object's values for a query: stored keys of its own directly, any other key
/// path through key-value coding; collects the places read beyond its own stored keys.
struct SubjectReader {
    let graph: ObjectGraph
    let object: StoredObject
    let schema: ClassSchema?
    var places: Set<ObjectPath> = []

    init(graph: ObjectGraph, object: StoredObject) {
        self.graph = graph
        self.object = object
        schema = graph.schema(of: object)
    }

    mutating func read(_ path: KeyPath) -> JSON {
        if path.components.count == 1, case .key(let key) = path.components[0],
            schema?.properties[key]?.computed == nil
        {
            let value = object.values[key] ?? .null
            guard let target = value.referencedID else { return value }
            places.insert(ObjectPath(objectID: target, keys: []))  // a dangling reference reads as null
            return graph.objects[target] == nil ? .null : value
        }
        let trace = DependencyTrace()
        let value = (try? graph.read(path, of: object.id, trace: trace)) ?? .null
        places.formUnion(trace.paths)
        return value
    }
}

extension QueryDefinition {
    /// `id`'s membership: its place and selected values when it matches (nil when it does not,
    /// or is gone), and the places read beyond its own stored keys.
    func evaluate(_ id: String, in graph: ObjectGraph) -> (member: QueryShape.Member?, places: Set<ObjectPath>) {
        guard let object = graph.objects[id], className == nil || object.className == className else { return (nil, []) }
        var reader = SubjectReader(graph: graph, object: object)
        for condition in conditions where !condition.holds(for: reader.read(condition.path)) {
            return (nil, reader.places)
        }
        let values = order.map { SortValue(reader.read($0.path)) }
        let selected = select.map { reader.read($0) }
        return (QueryShape.Member(key: MemberKey(values: values, id: id), selected: selected), reader.places)
    }
}
