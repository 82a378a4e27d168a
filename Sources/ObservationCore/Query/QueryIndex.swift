/// Finds the queries a write may affect without looking at the others (section 12: cost in
/// proportion to what a write affects, not to the number of queries).
///
/// Each shape of a class is entered once, by the most selective of its conditions on a
/// stored key of the class:
/// - an `==` / `in` condition on scalars: by its operands (a hash table), probed with the
///   written object's value of that key (old and new when that key is written);
/// - else a range condition (`<`, `<=`, `>`, `>=`) on a key it reads nowhere else: by its
///   bound (sorted), probed on a write of that key with the range between the old and new value;
/// - else a `prefix` condition on such a key: by its prefix, probed with the prefixes of the
///   old and new value;
/// - else by every top-level key it reads (`readers`), and for creations and deletions (`plain`).
/// Keys a range or prefix entry does not cover are in `readers` too. Reads through references
/// and computed values are found by the query dependents (`QueryBook.dependents`), not here.
/// Every set it hands out is sorted by the caller before use.
struct QueryIndex: Sendable {
    /// By class name ("" for queries without a class: they see every object).
    private var classes: [String: ClassQueries] = [:]

    var isEmpty: Bool { classes.isEmpty }

    /// Whether a shape of class `className`, or one without a class, reads top-level key `key`.
    func reads(_ key: String, className: String?) -> Bool {
        (className.map { classes[$0]?.readCounts[key] != nil } ?? false) || classes[""]?.readCounts[key] != nil
    }

    mutating func add(_ shape: Int, _ placement: QueryPlacement) {
        classes[placement.className, default: ClassQueries()].add(shape, placement)
    }

    mutating func remove(_ shape: Int, _ placement: QueryPlacement) {
        classes[placement.className]?.remove(shape, placement)
        if classes[placement.className]?.isEmpty == true { classes[placement.className] = nil }
    }

    /// The shapes a change of `key` (nil: the object was created or deleted) of an object of
    /// `className` may affect: `values` the object's values (after a write, before a
    /// deletion), `old` the key's value before the write.
    /// `computed`: whether the object's class computes a key (queries without a class enter
    /// shapes by keys any class may compute).
    func candidates(
        className: String?, key: String?, values: JSONObject, old: JSON?, computed: (String) -> Bool,
        into found: inout Set<Int>
    ) {
        if let className {
            classes[className]?.candidates(key: key, values: values, old: old, computed: { _ in false }, into: &found)
        }
        classes[""]?.candidates(key: key, values: values, old: old, computed: computed, into: &found)
    }
}

/// Where a shape is entered in the index, decided once from its definition.
struct QueryPlacement: Sendable {
    enum Entry: Sendable {
        case equality(key: String, values: [JSON])
        case range(key: String, lower: Bool, bound: SortValue)
        case prefix(key: String, text: String)
        case none
    }

    let className: String
    let entry: Entry
    /// The top-level keys whose writes reach it through `readers` (those the entry does not cover).
    let readers: [String]
    /// Every top-level key it reads (an equality entry's candidates are kept when they read the written key).
    let reads: Set<String>

    init(_ definition: QueryDefinition, schema: ClassSchema?) {
        className = definition.className ?? ""
        // Every use of a key, repeats included: a range key that orders or is selected too is not covered by its bound.
        let uses = definition.conditions.map(\.path) + definition.order.map(\.path) + definition.select
        let firstKeys = uses.compactMap { path -> String? in
            if case .key(let key)? = path.components.first { return key }
            return nil
        }
        reads = Set(firstKeys)
        // A stored key of the class, read whole: its value is what the index is probed with.
        // Without a class, any key read whole (an object whose class computes it is probed as
        // if it matched every entry on that key: see `ClassQueries.candidates`).
        func simpleKey(_ path: KeyPath) -> String? {
            guard path.components.count == 1, case .key(let key) = path.components[0] else { return nil }
            guard definition.className != nil else { return key }
            guard let schema, let spec = schema.properties[key], spec.computed == nil else { return nil }
            return key
        }
        func isScalar(_ value: JSON) -> Bool {
            switch value {
            case .bool, .int, .double, .string: true
            default: false
            }
        }
        func readOnce(_ key: String) -> Bool { firstKeys.filter { $0 == key }.count == 1 }
        var entry = Entry.none
        for condition in definition.conditions {
            guard let key = simpleKey(condition.path) else { continue }
            if condition.op == .equal, isScalar(condition.operand) {
                entry = .equality(key: key, values: [condition.operand])
                break
            }
            if condition.op == .in, condition.choices.allSatisfy(isScalar) {
                entry = .equality(
                    key: key,
                    values: Array(condition.choices).sorted {
                        $0.canonicalText.lexicographicallyPrecedes($1.canonicalText)
                    })
                break
            }
        }
        if case .none = entry {
            for condition in definition.conditions {
                guard let key = simpleKey(condition.path), readOnce(key) else { continue }
                switch condition.op {
                case .less, .lessOrEqual, .greater, .greaterOrEqual:
                    let lower = condition.op == .greater || condition.op == .greaterOrEqual
                    entry = .range(key: key, lower: lower, bound: SortValue(condition.operand))
                case .prefix:
                    guard case .string(let text) = condition.operand else { continue }
                    entry = .prefix(key: key, text: text)
                default: continue
                }
                break
            }
        }
        self.entry = entry
        switch entry {
        case .equality: readers = []
        case .range(let key, _, _), .prefix(let key, _): readers = Array(reads.subtracting([key])).sorted()
        case .none: readers = Array(reads).sorted()
        }
    }
}

/// The shapes of one class, by how a write finds them.
private struct ClassQueries: Sendable {
    /// How many of its shapes read each top-level key.
    var readCounts: [String: Int] = [:]
    var plain: Set<Int> = []
    var readers: [String: Set<Int>] = [:]
    var equality: [String: [JSON: Set<Int>]] = [:]
    /// Equality-entered shapes and the keys they read.
    var equalityReads: [Int: Set<String>] = [:]
    var ranges: [String: RangeBounds] = [:]
    var prefixes: [String: PrefixTable] = [:]

    var isEmpty: Bool {
        plain.isEmpty && readers.isEmpty && equality.isEmpty && ranges.isEmpty && prefixes.isEmpty
    }

    mutating func add(_ shape: Int, _ placement: QueryPlacement) {
        for key in placement.reads { readCounts[key, default: 0] += 1 }
        for key in placement.readers { readers[key, default: []].insert(shape) }
        switch placement.entry {
        case .equality(let key, let values):
            for value in values { equality[key, default: [:]][value, default: []].insert(shape) }
            equalityReads[shape] = placement.reads
        case .range(let key, let lower, let bound): ranges[key, default: RangeBounds()].add(shape, lower: lower, bound)
        case .prefix(let key, let text): prefixes[key, default: PrefixTable()].add(shape, text)
        case .none: plain.insert(shape)
        }
    }

    mutating func remove(_ shape: Int, _ placement: QueryPlacement) {
        for key in placement.reads {
            readCounts[key] = (readCounts[key] ?? 1) > 1 ? readCounts[key]! - 1 : nil
        }
        for key in placement.readers {
            readers[key]?.remove(shape)
            if readers[key]?.isEmpty == true { readers[key] = nil }
        }
        switch placement.entry {
        case .equality(let key, let values):
            for value in values {
                equality[key]?[value]?.remove(shape)
                if equality[key]?[value]?.isEmpty == true { equality[key]?[value] = nil }
            }
            if equality[key]?.isEmpty == true { equality[key] = nil }
            equalityReads[shape] = nil
        case .range(let key, let lower, let bound):
            ranges[key]?.remove(shape, lower: lower, bound)
            if ranges[key]?.isEmpty == true { ranges[key] = nil }
        case .prefix(let key, let text):
            prefixes[key]?.remove(shape, text)
            if prefixes[key]?.isEmpty == true { prefixes[key] = nil }
        case .none: plain.remove(shape)
        }
    }

    /// An entry on a key the object's class computes cannot be probed with a stored value: every
    /// shape entered by that key is a candidate (the evaluation reads the computed value).
    func candidates(
        key: String?, values: JSONObject, old: JSON?, computed: (String) -> Bool, into found: inout Set<Int>
    ) {
        for (entryKey, table) in equality {
            let reads = { (shape: Int) in key == nil || self.equalityReads[shape]?.contains(key!) == true }
            if computed(entryKey) {
                for shapes in table.values { found.formUnion(shapes.filter(reads)) }
                continue
            }
            var probes = [values[entryKey] ?? .null]
            if key == entryKey, let old { probes.append(old) }
            for probe in probes {
                for shape in table[probe] ?? [] where reads(shape) { found.insert(shape) }
            }
        }
        guard let key else {
            found.formUnion(plain)
            for (entryKey, bounds) in ranges {
                if computed(entryKey) {
                    bounds.all(into: &found)
                } else {
                    bounds.matching(values[entryKey] ?? .null, into: &found)
                }
            }
            for (entryKey, table) in prefixes {
                if computed(entryKey) {
                    table.all(into: &found)
                } else {
                    table.matching(values[entryKey] ?? .null, into: &found)
                }
            }
            return
        }
        found.formUnion(readers[key] ?? [])
        let new = values[key] ?? .null
        ranges[key]?.changing(from: old ?? .null, to: new, into: &found)
        if let table = prefixes[key] {
            table.matching(old ?? .null, into: &found)
            table.matching(new, into: &found)
        }
    }
}

/// Range conditions on one key by bound, sorted: lower bounds (`>`, `>=`) and upper bounds
/// (`<`, `<=`) apart. A value matches the lower bounds at or below it and the upper bounds at
/// or above it (of its own type: numbers with numbers, strings with strings).
private struct RangeBounds: Sendable {
    private var lower: [(bound: SortValue, shape: Int)] = []
    private var upper: [(bound: SortValue, shape: Int)] = []

    var isEmpty: Bool { lower.isEmpty && upper.isEmpty }

    mutating func add(_ shape: Int, lower isLower: Bool, _ bound: SortValue) {
        if isLower { Self.insert(&lower, bound, shape) } else { Self.insert(&upper, bound, shape) }
    }

    mutating func remove(_ shape: Int, lower isLower: Bool, _ bound: SortValue) {
        if isLower { Self.delete(&lower, bound, shape) } else { Self.delete(&upper, bound, shape) }
    }

    func all(into found: inout Set<Int>) {
        for entry in lower { found.insert(entry.shape) }
        for entry in upper { found.insert(entry.shape) }
    }

    /// The shapes whose condition `value` may satisfy.
    func matching(_ value: JSON, into found: inout Set<Int>) {
        guard let probe = Self.scalar(value) else { return }
        let (start, end) = Self.typeRange(of: probe, in: lower)
        for index in start..<Self.firstAfter(probe, in: lower, from: start, to: end) {
            found.insert(lower[index].shape)
        }
        let (from, to) = Self.typeRange(of: probe, in: upper)
        for index in Self.firstAtOrAfter(probe, in: upper, from: from, to: to)..<to { found.insert(upper[index].shape) }
    }

    /// The shapes whose condition holds for one of `old` and `new` and may not for the other.
    func changing(from old: JSON, to new: JSON, into found: inout Set<Int>) {
        guard let a = Self.scalar(old), let b = Self.scalar(new), Self.sameType(a, b) else {
            matching(old, into: &found)
            matching(new, into: &found)
            return
        }
        let (low, high) = a.compare(b) <= 0 ? (a, b) : (b, a)
        for list in [lower, upper] {
            let (start, end) = Self.typeRange(of: low, in: list)
            let first = Self.firstAtOrAfter(low, in: list, from: start, to: end)
            for index in first..<Self.firstAfter(high, in: list, from: first, to: end) {
                found.insert(list[index].shape)
            }
        }
    }

    private static func scalar(_ value: JSON) -> SortValue? {
        switch value {
        case .int, .double, .string: SortValue(value)
        default: nil
        }
    }

    private static func sameType(_ a: SortValue, _ b: SortValue) -> Bool {
        switch (a, b) {
        case (.number, .number), (.string, .string): true
        default: false
        }
    }

    /// The part of `list` holding bounds of `probe`'s type.
    private static func typeRange(of probe: SortValue, in list: [(bound: SortValue, shape: Int)]) -> (Int, Int) {
        let start = search(list, 0, list.count) { !sameType($0, probe) && $0.compare(probe) < 0 }
        let end = search(list, start, list.count) { sameType($0, probe) }
        return (start, end)
    }

    private static func firstAtOrAfter(
        _ probe: SortValue, in list: [(bound: SortValue, shape: Int)], from: Int, to: Int
    ) -> Int {
        search(list, from, to) { $0.compare(probe) < 0 }
    }

    private static func firstAfter(_ probe: SortValue, in list: [(bound: SortValue, shape: Int)], from: Int, to: Int)
        -> Int
    {
        search(list, from, to) { $0.compare(probe) <= 0 }
    }

    /// The first index in `from..<to` whose bound is not `before` (the list is partitioned by it).
    private static func search(
        _ list: [(bound: SortValue, shape: Int)], _ from: Int, _ to: Int, before: (SortValue) -> Bool
    ) -> Int {
        var low = from
        var high = to
        while low < high {
            let middle = (low + high) / 2
            if before(list[middle].bound) { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private static func insert(_ list: inout [(bound: SortValue, shape: Int)], _ bound: SortValue, _ shape: Int) {
        let index = search(list, 0, list.count) { $0.compare(bound) <= 0 }
        list.insert((bound, shape), at: index)
    }

    private static func delete(_ list: inout [(bound: SortValue, shape: Int)], _ bound: SortValue, _ shape: Int) {
        var index = search(list, 0, list.count) { $0.compare(bound) < 0 }
        while index < list.count, list[index].bound.compare(bound) == 0 {
            if list[index].shape == shape {
                list.remove(at: index)
                return
            }
            index += 1
        }
    }
}

/// `prefix` conditions on one key, by prefix, with the lengths in use (a value is probed
/// with its own prefixes of those lengths).
private struct PrefixTable: Sendable {
    private var shapes: [String: Set<Int>] = [:]
    private var lengths: [Int: Int] = [:]

    var isEmpty: Bool { shapes.isEmpty }

    mutating func add(_ shape: Int, _ text: String) {
        shapes[text, default: []].insert(shape)
        lengths[text.utf8.count, default: 0] += 1
    }

    mutating func remove(_ shape: Int, _ text: String) {
        shapes[text]?.remove(shape)
        if shapes[text]?.isEmpty == true { shapes[text] = nil }
        let count = text.utf8.count
        lengths[count] = (lengths[count] ?? 1) > 1 ? lengths[count]! - 1 : nil
    }

    func all(into found: inout Set<Int>) {
        for shapes in shapes.values { found.formUnion(shapes) }
    }

    func matching(_ value: JSON, into found: inout Set<Int>) {
        guard case .string(let text) = value else { return }
        let utf8 = text.utf8
        for (length, _) in lengths where length <= utf8.count {
            guard let start = String(utf8.prefix(length)) else { continue }
            found.formUnion(shapes[start] ?? [])
        }
    }
}
