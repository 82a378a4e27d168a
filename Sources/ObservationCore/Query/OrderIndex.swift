/// Every object of a class in one `orderBy` order: the store's ordered index a direct query
/// shape refills its window from, shared by every shape of that class and order (whatever
/// their conditions), kept while one of them is registered. Its keys are read from stored
/// scalar values, so a write of one of its keys (or a creation, a deletion) is all that
/// moves an object in it.
struct OrderIndex: Sendable {
    let className: String
    /// The top-level keys it orders by (each one stored key of a scalar type).
    let keys: Set<String>
    private let definition: QueryDefinition
    private var places: [String: MemberKey] = [:]
    private(set) var ordered: OrderedMembers
    /// The shapes that refill from it.
    var users = 0

    /// `"<class> <orderBy as canonical JSON>"`: shapes of one class and order share the index.
    static func name(of definition: QueryDefinition) -> String {
        "\(definition.className ?? "") \(String(decoding: JSON.array(definition.order.map(\.json)).canonicalText, as: UTF8.self))"
    }

    /// Built over the class's objects once.
    init(_ definition: QueryDefinition, in graph: ObjectGraph) {
        className = definition.className ?? ""
        self.definition = definition
        keys = Set(
            definition.order.compactMap { item -> String? in
                if case .key(let key)? = item.path.components.first { return key }
                return nil
            })
        ordered = OrderedMembers(order: MemberOrder(descending: definition.order.map(\.descending)))
        for id in graph.objectIDsByClass[className]?.page(after: nil, limit: .max).ids ?? [] {
            if let object = graph.objects[id] { place(id, at: definition.key(of: id, values: object.values)) }
        }
    }

    /// Moves object `id` to where its values (nil: it is gone) put it.
    mutating func update(_ id: String, values: JSONObject?) {
        if let old = places.removeValue(forKey: id) { ordered.remove(old) }
        if let values { place(id, at: definition.key(of: id, values: values)) }
    }

    private mutating func place(_ id: String, at key: MemberKey) {
        places[id] = key
        ordered.insert(key)
    }
}
