/// One query an observer registered (section 12): a registration like an observation, on
/// the members of a shape.
struct QueryRegistration: Sendable {
    let id: String
    let observerID: String
    var shape: Int
    /// `initial`, `new`, `old`.
    let options: ObservationOptions
    let context: JSON?
    let createdAt: Timestamp
    /// Creation order, shared with observations (a rebuild after `reset` follows it).
    let sequence: Int
    /// At most one record per this many milliseconds (0: a record with every change).
    let throttle: Int
    /// Its records' own bytes around the shared tail: `{"query":…,` and `,"context":…}`.
    var framing: (prefix: [UInt8], suffix: [UInt8]) = ([], [])
    /// Throttled: when the window of the last record sent ends.
    var windowEnd: Timestamp? = nil
    /// Throttled: the revision of the latest change folded while the window is open.
    var foldedRevision: Int? = nil
    /// Throttled: the window, total and revision its last record showed (what the next
    /// record is the difference from).
    var sent: SentWindow? = nil

    struct SentWindow: Sendable {
        var window: [WindowMember]
        var total: Int
        var revision: Int
    }

    /// `{"query":"qry_…",` and `,"context":…}` (or `}`).
    static func framing(id: String, context: JSON?) -> (prefix: [UInt8], suffix: [UInt8]) {
        let prefix = JSONWriter.encode { writer in
            writer.raw("{\"query\":")
            writer.write(id)
            writer.raw(",")
        }
        let suffix = JSONWriter.encode { writer in
            if let context {
                writer.raw(",\"context\":")
                writer.write(context)
            }
            writer.raw("}")
        }
        return (prefix, suffix)
    }

    func record(tail: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(framing.prefix.count + tail.count + framing.suffix.count)
        bytes.append(contentsOf: framing.prefix)
        bytes.append(contentsOf: tail)
        bytes.append(contentsOf: framing.suffix)
        return bytes
    }
}

/// A query as clients see it.
public struct QuerySnapshot: Sendable {
    public let id: String
    public let observerID: String
    /// `class`, `where`, `orderBy`, `limit`, `select`.
    public let definition: JSONObject
    public let options: ObservationOptions
    public let context: JSON?
    public let createdAt: Timestamp
    public let throttle: Int
    /// The window now, in order, and how many objects match (for a single query).
    public var ids: [String]? = nil
    public var total: Int? = nil

    /// `{"id", "class", "where", "orderBy", "limit", "select", "options", "context", "createdAt"}`
    /// (and `throttle`, `ids`, `total` when there are).
    public var json: JSONObject {
        var members: JSONObject = ["id": .string(id)]
        for (key, value) in definition { members[key] = value }
        members["options"] = .array(options.nameList.map(JSON.string))
        members["context"] = context ?? .null
        members["createdAt"] = .string(createdAt.rfc3339)
        if throttle > 0 { members["throttle"] = .int(throttle) }
        if let ids { members["ids"] = .array(ids.map(JSON.string)) }
        if let total { members["total"] = .int(total) }
        return members
    }
}

/// What registering a query answers.
public struct QueryResult: Sendable {
    public let query: QuerySnapshot
    public let deduplicated: Bool
    /// The revision taken; nil for a deduplicated registration (nothing changed).
    public let revision: Int?
}

/// What `POST /v1/query` answers: the window's objects with their selected values, how many
/// match, and the revision they are read at.
public struct QueryAnswer: Sendable {
    public let objects: [(id: String, values: JSONObject)]
    public let total: Int
    public let revision: Int
}

// MARK: - Encoding records

extension QueryDiff {
    /// The shared part of a query record: `"revision":r,"total":n,["initial":true,]"removed":[…],
    /// "inserted":[…],"updated":[…][,"by":…][,"tx":…]`, with `old` / `new` values as `options` ask.
    func encodedTail(
        revision: Int, options: ObservationOptions, select: [KeyPath], initial: Bool = false, by: String? = nil,
        tx: String? = nil
    ) -> [UInt8] {
        let (withOld, withNew) = (options.contains(.old), options.contains(.new))
        return JSONWriter.encode { writer in
            writer.raw("\"revision\":")
            writer.write(revision)
            writer.raw(",\"total\":")
            writer.write(total)
            if initial { writer.raw(",\"initial\":true") }
            writer.raw(",\"removed\":[")
            for (offset, entry) in removed.enumerated() {
                Self.write(entry, values: withOld ? "old" : nil, select: select, first: offset == 0, to: &writer)
            }
            writer.raw("],\"inserted\":[")
            for (offset, entry) in inserted.enumerated() {
                Self.write(entry, values: withNew ? "new" : nil, select: select, first: offset == 0, to: &writer)
            }
            writer.raw("],\"updated\":[")
            for (offset, update) in updated.enumerated() {
                if offset > 0 { writer.raw(",") }
                writer.raw("{\"index\":")
                writer.write(update.index)
                writer.raw(",\"id\":")
                writer.write(update.id)
                if withOld { Self.write("old", update.changes.map { (select[$0.position], $0.old) }, to: &writer) }
                if withNew { Self.write("new", update.changes.map { (select[$0.position], $0.new) }, to: &writer) }
                writer.raw("}")
            }
            writer.raw("]")
            writer.writeCause(by: by, tx: tx)
        }
    }

    /// Whether `options` make records of this diff differ from those without values (the
    /// tail is shared per value options).
    private static func write(
        _ entry: Entry, values name: String?, select: [KeyPath], first: Bool, to writer: inout JSONWriter
    ) {
        if !first { writer.raw(",") }
        writer.raw("{\"index\":")
        writer.write(entry.index)
        writer.raw(",\"id\":")
        writer.write(entry.member.id)
        if entry.moved { writer.raw(",\"moved\":true") }
        if let name, !select.isEmpty { write(name, Array(zip(select, entry.member.selected)), to: &writer) }
        writer.raw("}")
    }

    /// `,"name":{"keyPath":value,…}`
    private static func write(_ name: String, _ values: [(KeyPath, JSON)], to writer: inout JSONWriter) {
        writer.raw(",")
        writer.key(name)
        writer.raw("{")
        for (offset, (path, value)) in values.enumerated() {
            if offset > 0 { writer.raw(",") }
            writer.key(path.description)
            writer.write(value)
        }
        writer.raw("}")
    }
}
