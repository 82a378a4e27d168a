/// A value's place in a query's order (section 12): missing or `null`, `false`, `true`,
/// numbers, strings (by Unicode scalar values: their UTF-8 bytes), then anything else by its
/// canonical JSON text (keys sorted, no white space).
enum SortValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case other([UInt8])

    init(_ value: JSON) {
        switch value {
        case .null: self = .null
        case .bool(let flag): self = .bool(flag)
        case .int(let number): self = .number(Double(number))
        case .double(let number): self = .number(number)
        case .string(let text): self = .string(text)
        case .array, .object: self = .other(value.canonicalText)
        }
    }

    private var rank: Int {
        switch self {
        case .null: 0
        case .bool(false): 1
        case .bool(true): 2
        case .number: 3
        case .string: 4
        case .other: 5
        }
    }

    /// -1, 0 or 1 as `self` orders before, with or after `other`.
    func compare(_ other: SortValue) -> Int {
        switch (self, other) {
        case (.number(let a), .number(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.string(let a), .string(let b)): return Self.compareBytes(a.utf8, b.utf8)
        case (.other(let a), .other(let b)): return Self.compareBytes(a, b)
        default:
            let (a, b) = (rank, other.rank)
            return a < b ? -1 : (a > b ? 1 : 0)
        }
    }

    /// The order of two numbers or two strings (a condition's `<`, `<=`, `>`, `>=`); nil for
    /// any other pair: such a value never matches.
    static func compareScalars(_ value: JSON, _ operand: JSON) -> Int? {
        switch (value, operand) {
        case (.string(let a), .string(let b)): return compareBytes(a.utf8, b.utf8)
        default:
            guard let a = value.number, let b = operand.number else { return nil }
            return a < b ? -1 : (a > b ? 1 : 0)
        }
    }

    static func compareBytes(_ a: some Sequence<UInt8>, _ b: some Sequence<UInt8>) -> Int {
        var left = a.makeIterator()
        var right = b.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil): return 0
            case (nil, _): return -1
            case (_, nil): return 1
            case (let x?, let y?) where x != y: return x < y ? -1 : 1
            default: continue
            }
        }
    }
}

/// Where a member stands in its query's order: its `orderBy` values, then its id.
struct MemberKey: Sendable, Hashable {
    let values: [SortValue]
    let id: String
}

/// The order of a query's members: each `orderBy` key in its direction, then the id ascending.
struct MemberOrder: ChunkOrder {
    let descending: [Bool]

    func precedes(_ a: MemberKey, _ b: MemberKey) -> Bool {
        for index in descending.indices {
            let order = a.values[index].compare(b.values[index])
            if order != 0 { return descending[index] ? order > 0 : order < 0 }
        }
        return SortValue.compareBytes(a.id.utf8, b.id.utf8) < 0
    }
}

extension JSON {
    /// The canonical JSON text: object keys sorted (by their UTF-8 bytes), no white space.
    var canonicalText: [UInt8] {
        JSONWriter.encode { writer in writeCanonical(self, to: &writer) }
    }
}

private func writeCanonical(_ value: JSON, to writer: inout JSONWriter) {
    switch value {
    case .array(let items):
        writer.raw("[")
        for (index, item) in items.enumerated() {
            if index > 0 { writer.raw(",") }
            writeCanonical(item, to: &writer)
        }
        writer.raw("]")
    case .object(let members):
        writer.raw("{")
        let sorted = members.map { ($0.key, $0.value) }.sorted { SortValue.compareBytes($0.0.utf8, $1.0.utf8) < 0 }
        for (index, (key, member)) in sorted.enumerated() {
            if index > 0 { writer.raw(",") }
            writer.key(key)
            writeCanonical(member, to: &writer)
        }
        writer.raw("}")
    default:
        writer.write(value)
    }
}
