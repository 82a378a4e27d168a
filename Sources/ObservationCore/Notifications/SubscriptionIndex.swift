/// GNUstep's NSNotificationCenter tables: named (name → object → subscriptions, with the
/// "any object" ones apart), nameless (object → subscriptions) and wildcard. A posting
/// finds its subscriptions with at most four lookups: its cost follows what it matches,
/// never the number of subscriptions to other names or objects.
struct SubscriptionIndex: Sendable {
    private struct Named: Sendable {
        var anyObject: Set<String> = []
        var byObject: [String: Set<String>] = [:]
        var isEmpty: Bool { anyObject.isEmpty && byObject.isEmpty }
    }

    private var named: [String: Named] = [:]
    private var nameless: [String: Set<String>] = [:]
    private var wildcard: Set<String> = []

    mutating func insert(_ id: String, _ target: SubscriptionTarget) {
        switch (target.name, target.object) {
        case (let name?, let object?): named[name, default: Named()].byObject[object, default: []].insert(id)
        case (let name?, nil): named[name, default: Named()].anyObject.insert(id)
        case (nil, let object?): nameless[object, default: []].insert(id)
        case (nil, nil): wildcard.insert(id)
        }
    }

    mutating func remove(_ id: String, _ target: SubscriptionTarget) {
        switch (target.name, target.object) {
        case (let name?, let object?):
            named[name]?.byObject[object]?.remove(id)
            if named[name]?.byObject[object]?.isEmpty == true { named[name]?.byObject[object] = nil }
            if named[name]?.isEmpty == true { named[name] = nil }
        case (let name?, nil):
            named[name]?.anyObject.remove(id)
            if named[name]?.isEmpty == true { named[name] = nil }
        case (nil, let object?):
            nameless[object]?.remove(id)
            if nameless[object]?.isEmpty == true { nameless[object] = nil }
        case (nil, nil):
            wildcard.remove(id)
        }
    }

    /// The subscriptions a posting of `name` from `object` reaches. A subscription for an
    /// object never receives postings without one (as in NSNotificationCenter).
    func matching(name: String, object: String?) -> Set<String> {
        var result = wildcard
        if let entry = named[name] {
            result.formUnion(entry.anyObject)
            if let object, let exact = entry.byObject[object] { result.formUnion(exact) }
        }
        if let object, let byObject = nameless[object] { result.formUnion(byObject) }
        return result
    }
}
