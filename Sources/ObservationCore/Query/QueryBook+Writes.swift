// MARK: - A revision's writes, as queries see them

/// What the objects a revision wrote were before it: absent (created in it), or their stored
/// values then (the values now with each key written put back as the first write found it).
struct RevisionBefore {
    private var before: [String: JSONObject?] = [:]
    /// What scopes matched each written object by (a deleted one is no longer in the graph).
    private var identities: [String: ObjectIdentity] = [:]

    init(_ changes: [QueryChange], in graph: ObjectGraph) {
        for change in changes {
            identities[change.objectID] = ObjectIdentity(
                id: change.objectID, className: change.className, ownerToken: change.ownerToken)
            if before[change.objectID] != nil {
                // Only the first write of a key in the revision knows its value before it.
                if let key = change.key, case .some(.some(var values)) = before[change.objectID],
                    !written(change.objectID, key)
                {
                    values[key] = change.old
                    before[change.objectID] = .some(values)
                    keysWritten.insert("\(change.objectID) \(key)")
                }
                continue
            }
            guard let key = change.key else {
                // A creation (the object is there now) or a deletion (its values then).
                before[change.objectID] = graph.objects[change.objectID] == nil ? .some(change.values) : .some(nil)
                continue
            }
            var values = graph.objects[change.objectID]?.values ?? change.values
            values[key] = change.old
            before[change.objectID] = .some(values)
            keysWritten.insert("\(change.objectID) \(key)")
        }
    }

    private var keysWritten: Set<String> = []

    private func written(_ id: String, _ key: String) -> Bool { keysWritten.contains("\(id) \(key)") }

    /// The object's stored values before the revision; nil when it did not exist.
    func values(of id: String, in graph: ObjectGraph) -> JSONObject? {
        if let known = before[id] { return known }
        return graph.objects[id]?.values
    }

    /// Object `id`'s identity as the revision's writes knew it.
    func identity(of id: String, className: String?) -> ObjectIdentity {
        identities[id] ?? ObjectIdentity(id: id, className: className)
    }
}

extension QueryBook {
    /// The shapes a revision's changes may affect, each with the objects to evaluate again
    /// (sorted); the order indexes are brought up to date on the way.
    mutating func affected(by changes: [QueryChange], in graph: ObjectGraph) -> [(shape: Int, subjects: [String])] {
        var subjects: [Int: Set<String>] = [:]
        for change in changes {
            let schema = change.className.flatMap { graph.classes[$0]?.schema }
            var found = Set<Int>()
            index.candidates(
                className: change.className, key: change.key, values: change.values, old: change.old,
                computed: { schema?.properties[$0]?.computed != nil }, into: &found)
            for shape in found { subjects[shape, default: []].insert(change.objectID) }
            if let byKey = dependents.table[change.objectID] {
                let tokens: [Set<String>] = change.key.map { [byKey[$0] ?? []] } ?? Array(byKey.values)
                for token in tokens.joined() {
                    guard let (shape, subject) = Self.parse(token) else { continue }
                    subjects[shape, default: []].insert(subject)
                }
            }
        }
        updateOrderIndexes(changes, in: graph)
        return subjects.keys.sorted().map { ($0, subjects[$0]!.sorted()) }
    }

    /// Moves the objects written in the order indexes of their class that order by a key written.
    private mutating func updateOrderIndexes(_ changes: [QueryChange], in graph: ObjectGraph) {
        guard !orderIndexes.isEmpty else { return }
        for name in orderIndexes.keys.sorted() {
            guard let index = orderIndexes[name] else { continue }
            var moved = Set<String>()
            for change in changes where change.className == index.className {
                if change.key.map(index.keys.contains) ?? true { moved.insert(change.objectID) }
            }
            for id in moved.sorted() { orderIndexes[name]?.update(id, values: graph.objects[id]?.values) }
        }
    }

    /// Evaluates `subjects` of shape `number` again after a revision; returns how its window
    /// changed, nil when neither the window, a selected value nor the total did.
    mutating func refresh(_ number: Int, subjects: [String], before: RevisionBefore, in graph: ObjectGraph)
        -> QueryDiff?
    {
        guard var shape = shapes.removeValue(forKey: number) else { return nil }
        defer { shapes[number] = shape }
        let totalBefore = shape.total
        let window: [WindowMember]?
        if shape.traced != nil {
            var touched = false
            for id in subjects {
                let (member, places) = shape.definition.evaluate(id, in: graph)
                track(&shape, id, places)
                if shape.traced!.update(id, to: member, limit: shape.definition.limit) { touched = true }
            }
            shape.total = shape.traced!.count
            window = touched ? shape.traced!.window(shape.definition.limit) : nil
        } else {
            window = refreshDirect(&shape, subjects, before: before, in: graph)
        }
        guard let window else { return shape.total == totalBefore ? nil : QueryDiff(total: shape.total) }
        let diff = QueryDiff.between(shape.window, window, total: shape.total)
        shape.window = window
        return diff.isEmpty && shape.total == totalBefore ? nil : diff
    }

    /// A direct shape after a revision: `total` moved by each subject's membership before and
    /// after, and the new window (nil when it cannot have changed). The members that stay are
    /// the old window's that were not written, and the written members up to the old window's
    /// last place (every other member is past it); a window short of `limit` is refilled from
    /// the ordered index, after that place.
    private func refreshDirect(
        _ shape: inout QueryShape, _ subjects: [String], before: RevisionBefore, in graph: ObjectGraph
    ) -> [WindowMember]? {
        let (definition, limit, order) = (shape.definition, shape.definition.limit, shape.order)
        let written = Set(subjects)
        let boundary = shape.window.count == limit ? shape.window.last?.key : nil
        var kept = shape.window.filter { !written.contains($0.id) }
        var touched = kept.count != shape.window.count
        var entering: [WindowMember] = []
        for id in subjects {
            let was =
                definition.isVisible(before.identity(of: id, className: definition.className))
                && (before.values(of: id, in: graph).map(definition.matches) ?? false)
            let member = definition.evaluate(id, in: graph).member
            shape.total += (member == nil ? 0 : 1) - (was ? 1 : 0)
            guard let member else { continue }
            if let boundary, order.precedes(boundary, member.key) { continue }  // past the window: stays out
            entering.append(WindowMember(key: member.key, selected: member.selected))
            touched = true
        }
        guard touched else { return nil }
        entering.sort { order.precedes($0.key, $1.key) }
        kept = Self.merge(kept, entering, order).prefix(limit).map { $0 }
        if let boundary, kept.count < min(limit, shape.total) {
            refill(&kept, after: boundary, shape: shape, in: graph)
        }
        return kept
    }

    /// Appends the matching objects after `boundary` in the shape's order until the window is full.
    private func refill(
        _ window: inout [WindowMember], after boundary: MemberKey, shape: QueryShape, in graph: ObjectGraph
    ) {
        let wanted = min(shape.definition.limit, shape.total)
        func take(_ id: String) -> Bool {
            if let member = shape.definition.evaluate(id, in: graph).member {
                window.append(WindowMember(key: member.key, selected: member.selected))
            }
            return window.count < wanted
        }
        if let name = shape.orderIndex {
            orderIndexes[name]?.ordered.forEach(after: boundary) { take($0.id) }
            return
        }
        let ids = graph.objectIDsByClass[shape.definition.className ?? ""] ?? SortedIDs()
        var cursor = boundary.id
        while window.count < wanted {
            let page = ids.page(after: cursor, limit: 64)
            for id in page.ids where !take(id) { return }
            guard page.more, let last = page.ids.last else { return }
            cursor = last
        }
    }

    /// Two windows in order, merged.
    private static func merge(_ a: [WindowMember], _ b: [WindowMember], _ order: MemberOrder) -> [WindowMember] {
        guard !b.isEmpty else { return a }
        var merged: [WindowMember] = []
        merged.reserveCapacity(a.count + b.count)
        var (i, j) = (0, 0)
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && order.precedes(a[i].key, b[j].key)) {
                merged.append(a[i])
                i += 1
            } else {
                merged.append(b[j])
                j += 1
            }
        }
        return merged
    }
}
