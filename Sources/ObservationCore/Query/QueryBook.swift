/// Every query, the shared evaluations they read (`QueryShape`), and the indexes that find
/// them: by id, by observer and definition (deduplication), by what a write may affect
/// (`QueryIndex` for an object's own stored keys, `dependents` for what evaluations read
/// through references and computed values, a `DependentIndex` of subject tokens).
///
/// Owns its fields; evaluates against the graph it is given. Lists it hands out are in
/// creation order; shape numbers never reach an answer or a record.
struct QueryBook: Sendable {
    private(set) var queries: [String: QueryRegistration] = [:]
    var shapes: [Int: QueryShape] = [:]
    private var shapeByDefinition: [String: Int] = [:]
    /// Query ids by observer, then by definition and options (deduplication).
    private var byObserver: [String: [QueryTarget: String]] = [:]
    /// Subjects (`"<shape> <object id>"`) of traced shapes by the places their evaluation read.
    var dependents = DependentIndex()
    var index = QueryIndex()
    /// The ordered indexes direct shapes with `orderBy` refill from, by `OrderIndex.name`.
    var orderIndexes: [String: OrderIndex] = [:]
    private var lastShape = 0

    var count: Int { queries.count }
    var isEmpty: Bool { queries.isEmpty }
    var ids: [String] { queries.keys.sorted() }

    subscript(id: String) -> QueryRegistration? { queries[id] }

    func count(of observerID: String) -> Int { byObserver[observerID]?.count ?? 0 }

    /// Whether a query may read `key` of object `objectID` (of class `className`): a shape of
    /// its class (or of none) reads it, or an evaluation read it through a reference or a
    /// computed value. A write of a key none reads changes no window.
    func mayRead(_ key: String, of objectID: String, className: String?) -> Bool {
        index.reads(key, className: className) || dependents.table[objectID]?[key] != nil
    }

    /// An observer's queries, in creation order.
    func owned(by observerID: String) -> [QueryRegistration] {
        (byObserver[observerID]?.values.compactMap { queries[$0] } ?? []).sorted { $0.sequence < $1.sequence }
    }

    func existing(_ id: String, of observerID: String) -> QueryRegistration? {
        guard let query = queries[id], query.observerID == observerID else { return nil }
        return query
    }

    func registered(_ target: QueryTarget, by observerID: String) -> QueryRegistration? {
        byObserver[observerID]?[target].flatMap { queries[$0] }
    }

    func shape(of query: QueryRegistration) -> QueryShape {
        guard let shape = shapes[query.shape] else { preconditionFailure("query \(query.id) has no shape") }
        return shape
    }

    /// The shape evaluating `definition`, when a query reads it.
    func shape(for definition: QueryDefinition) -> QueryShape? {
        shapeByDefinition[definition.canonical].flatMap { shapes[$0] }
    }

    /// Adds a query reading shape `query.shape` (see `shapeNumber`).
    mutating func insert(_ query: QueryRegistration, definition: QueryDefinition) {
        queries[query.id] = query
        byObserver[query.observerID, default: [:]][QueryTarget(definition, query.options)] = query.id
        shapes[query.shape]?.queries.append(query.id)
    }

    /// The shape number a new query of `definition` reads: the existing one, or a new shape
    /// evaluated over the graph.
    mutating func shapeNumber(for definition: QueryDefinition, in graph: ObjectGraph) -> Int {
        if let number = shapeByDefinition[definition.canonical] { return number }
        lastShape += 1
        install(evaluated(lastShape, definition, in: graph), in: graph)
        return lastShape
    }

    /// A shape of `definition` evaluated over the objects of its class (or every object), once.
    private mutating func evaluated(_ number: Int, _ definition: QueryDefinition, in graph: ObjectGraph)
        -> QueryShape
    {
        let schema = definition.className.flatMap { graph.classes[$0]?.schema }
        var shape = QueryShape(
            number: number, definition: definition, placement: QueryPlacement(definition, schema: schema),
            direct: QueryShape.isDirect(definition, schema: schema))
        let ids =
            definition.className.map { graph.objectIDsByClass[$0]?.page(after: nil, limit: .max).ids ?? [] }
            ?? graph.objectIDs.page(after: nil, limit: .max).ids
        var tracked: [(String, Set<ObjectPath>)] = []
        shape.evaluateAll(ids, in: graph) { id, places in tracked.append((id, places)) }
        for (id, places) in tracked { track(&shape, id, places) }
        return shape
    }

    private mutating func install(_ shape: QueryShape, in graph: ObjectGraph) {
        shapes[shape.number] = shape
        shapeByDefinition[shape.definition.canonical] = shape.number
        index.add(shape.number, shape.placement)
        if let name = shape.orderIndex {
            if orderIndexes[name] == nil { orderIndexes[name] = OrderIndex(shape.definition, in: graph) }
            orderIndexes[name]?.users += 1
        }
    }

    /// Takes a shape out of every index (its subjects' places included).
    private mutating func uninstall(_ number: Int) -> QueryShape? {
        guard let shape = shapes.removeValue(forKey: number) else { return nil }
        for (subject, places) in shape.traced?.tracked ?? [:] {
            for place in places { dependents.remove(Self.token(number, subject), at: place) }
        }
        index.remove(number, shape.placement)
        shapeByDefinition[shape.definition.canonical] = nil
        if let name = shape.orderIndex {
            orderIndexes[name]?.users -= 1
            if orderIndexes[name]?.users == 0 { orderIndexes[name] = nil }
        }
        return shape
    }

    /// Takes a query out; its shape goes when no query reads it any more.
    @discardableResult
    mutating func remove(_ id: String) -> QueryRegistration? {
        guard let query = queries.removeValue(forKey: id), var shape = shapes[query.shape] else { return nil }
        byObserver[query.observerID]?[QueryTarget(shape.definition, query.options)] = nil
        if byObserver[query.observerID]?.isEmpty == true { byObserver[query.observerID] = nil }
        shape.queries.removeAll { $0 == id }
        shapes[query.shape] = shape
        if shape.queries.isEmpty { _ = uninstall(query.shape) }
        return query
    }

    mutating func update<T>(_ id: String, _ body: (inout QueryRegistration) -> T) -> T? {
        guard queries[id] != nil else { return nil }
        return body(&queries[id]!)
    }

    /// Evaluates every shape that may read objects of `className` (its own, and those without a
    /// class) from scratch, under the class as it is now (its computed keys, types and index
    /// entries may have changed); returns the shapes whose window or total changed, with how.
    mutating func reevaluate(ofClass className: String, in graph: ObjectGraph) -> [(shape: Int, diff: QueryDiff)] {
        var changed: [(shape: Int, diff: QueryDiff)] = []
        for number in shapes.keys.sorted() {
            guard let definition = shapes[number]?.definition,
                definition.className == nil || definition.className == className, let old = uninstall(number)
            else { continue }
            var shape = evaluated(number, definition, in: graph)
            shape.queries = old.queries
            install(shape, in: graph)
            let diff = QueryDiff.between(old.window, shape.window, total: shape.total)
            if !diff.isEmpty || old.total != shape.total { changed.append((number, diff)) }
        }
        return changed
    }

    /// Moves a subject's entries in `dependents` to the places it read now (traced shapes),
    /// but for the top-level keys of its own the shape reads: the class index finds those.
    mutating func track(_ shape: inout QueryShape, _ id: String, _ read: Set<ObjectPath>) {
        guard shape.traced != nil else { return }
        let reads = shape.placement.reads
        let places = read.filter { place in
            place.objectID != id || place.keys.count != 1 || !reads.contains(place.keys[0])
        }
        let before = shape.traced!.tracked[id] ?? []
        guard before != places else { return }
        let token = Self.token(shape.number, id)
        for place in before.subtracting(places) { dependents.remove(token, at: place) }
        for place in places.subtracting(before) { dependents.add(token, at: place) }
        shape.traced!.tracked[id] = places.isEmpty ? nil : places
    }

    static func token(_ shape: Int, _ id: String) -> String { "\(shape) \(id)" }

    static func parse(_ token: String) -> (Int, String)? {
        guard let space = token.firstIndex(of: " "), let shape = Int(token[..<space]) else { return nil }
        return (shape, String(token[token.index(after: space)...]))
    }
}

/// What a query is unique on, per observer: its definition and its options.
struct QueryTarget: Hashable, Sendable {
    let definition: String
    let options: ObservationOptions

    init(_ definition: QueryDefinition, _ options: ObservationOptions) {
        self.definition = definition.canonical
        self.options = options
    }
}

/// A write, as queries see it: the object, its class, the top-level key written (nil: the
/// object was created or deleted), its values (after the write; before a deletion), and the
/// key's value before the write.
struct QueryChange {
    let objectID: String
    let className: String?
    /// The token that made the object's owner (section 14): fixed while it exists.
    let ownerToken: String?
    let key: String?
    let values: JSONObject
    let old: JSON?
}
