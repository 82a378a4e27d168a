/// A query's definition (section 12), parsed and checked against the classes: which objects
/// (`class`, `where`), in what order (`orderBy`, then the id), how many (`limit`), and which
/// of their values records carry (`select`).
///
/// Two definitions with the same `canonical` text have the same members in the same order:
/// they share one evaluation (`QueryShape`), whoever registered them.
struct QueryDefinition: Sendable {
    let className: String?
    let conditions: [QueryCondition]
    let order: [QueryOrder]
    let limit: Int
    let select: [KeyPath]
    /// The definition as clients see it (`class`, `where`, `orderBy`, `limit`, `select`), normalized.
    let json: JSONObject
    /// `json`'s text with keys in a fixed order, then the reader's filter: equal for equal
    /// definitions read by readers who may read the same objects.
    private(set) var canonical: String
    /// What its reader may read (section 13): other objects are not members, and read as
    /// `null` along references. Nil: everything.
    private(set) var filter: ReadFilter?
    /// The conditions in the order an object is tested: those on one key of its own first.
    let evaluationOrder: [QueryCondition]

    static let maxConditions = 16
    static let maxInValues = 100
    static let maxOrder = 3
    static let maxSelect = 32
    static let limitRange = 1...10_000
    static let defaultLimit = 1000
    /// The members of a definition (`POST /v1/query` takes these only).
    static let members = ["class", "where", "orderBy", "limit", "select"]

    /// Parses `definition` (a JSON object of `members`) and checks every key path against
    /// the class (`unknownKeyPath`), every operator and operand; throws the contract's error.
    /// A stored definition is read back without the class checks (`stored`): its class may
    /// have been replaced or deleted since it was registered, and it reads what there is.
    init(
        _ definition: JSONObject, checker: KeyPathChecker, stored: Bool = false, classExists: (String) -> Bool
    ) throws(CoreError) {
        let checker = stored ? KeyPathChecker { _ in nil } : checker
        for (key, _) in definition where !Self.members.contains(key) {
            throw CoreError.unknownField(key, in: "query", allowed: Self.members)
        }
        let className: String?
        switch definition["class"] {
        case nil, .null?: className = nil
        case .string(let name)?:
            try Names.checkID(name, "class name")
            guard stored || classExists(name) else { throw CoreError.notFound("class", name) }
            className = name
        case let other?: throw Self.invalid("class", "must be a class name, not \(other.typeNameWithArticle)")
        }
        let conditions = try Self.list(definition["where"], "where", max: Self.maxConditions).map {
            (item) throws(CoreError) in try QueryCondition(item, checker: checker, className: className)
        }
        let order = try Self.list(definition["orderBy"], "orderBy", max: Self.maxOrder).map {
            (item) throws(CoreError) in try QueryOrder(item, checker: checker, className: className)
        }
        let limit: Int
        switch definition["limit"] {
        case nil, .null?: limit = Self.defaultLimit
        case .int(let value)? where Self.limitRange.contains(value): limit = value
        case .double(let value)? where value.rounded() == value && (1...10_000).contains(value): limit = Int(value)
        default: throw Self.invalid("limit", "must be an integer from 1 to 10000")
        }
        var select: [KeyPath] = []
        for item in try Self.list(definition["select"], "select", max: Self.maxSelect) {
            guard case .string(let text) = item else { throw Self.invalid("select", "holds key paths (strings)") }
            let path = try KeyPath(text)
            try checker.check(path, from: className)
            if !select.contains(path) { select.append(path) }
        }
        self.className = className
        self.conditions = conditions
        evaluationOrder =
            conditions.filter { $0.path.components.count == 1 } + conditions.filter { $0.path.components.count > 1 }
        self.order = order
        self.limit = limit
        self.select = select
        json = [
            "class": className.map(JSON.string) ?? .null, "where": .array(conditions.map(\.json)),
            "orderBy": .array(order.map(\.json)), "limit": .int(limit),
            "select": .array(select.map { .string($0.description) }),
        ]
        canonical = String(decoding: JSON.object(json).canonicalText, as: UTF8.self)
    }

    /// The definition as a reader with `filter` sees it. No filter when the reader may read
    /// every object of the class and the definition reads nothing beyond its own scalar keys.
    func restricted(to filter: ReadFilter?, schema: ClassSchema?) -> QueryDefinition {
        var restricted = self
        restricted.canonical = String(decoding: JSON.object(json).canonicalText, as: UTF8.self)
        restricted.filter = nil
        guard let filter else { return restricted }
        if let className, filter.readsAll(ofClass: className), QueryShape.isDirect(self, schema: schema) {
            return restricted
        }
        restricted.filter = filter
        restricted.canonical += "\n" + filter.key
        return restricted
    }

    /// Whether the reader may read `object` (it is not a member otherwise).
    func isVisible(_ object: ObjectIdentity) -> Bool {
        filter?.mayRead(object) ?? true
    }

    /// Every key path the definition reads, conditions first (each once).
    var keyPaths: [KeyPath] {
        var paths: [KeyPath] = []
        for path in conditions.map(\.path) + order.map(\.path) + select where !paths.contains(path) {
            paths.append(path)
        }
        return paths
    }

    private static func list(_ value: JSON?, _ field: String, max: Int) throws(CoreError) -> [JSON] {
        switch value {
        case nil, .null?: return []
        case .array(let items)? where items.count <= max: return items
        case .array?: throw invalid(field, "holds at most \(max) entries")
        case let other?: throw invalid(field, "must be an array, not \(other.typeNameWithArticle)")
        }
    }

    static func invalid(_ field: String, _ reason: String) -> CoreError {
        CoreError(.invalidRequest, "'\(field)' \(reason)", details: ["field": .string(field)])
    }
}

/// One condition of `where`: `[keyPath, op, operand]`.
struct QueryCondition: Sendable {
    enum Operator: String, Sendable, CaseIterable {
        case equal = "==", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
        case `in`, prefix, exists
    }

    let path: KeyPath
    let op: Operator
    let operand: JSON
    /// `in`'s operands, as a set.
    let choices: Set<JSON>

    init(_ item: JSON, checker: KeyPathChecker, className: String?) throws(CoreError) {
        guard case .array(let parts) = item, parts.count == 3, case .string(let text) = parts[0],
            case .string(let name) = parts[1]
        else { throw QueryDefinition.invalid("where", "holds conditions [keyPath, operator, operand]") }
        guard let op = Operator(rawValue: name) else {
            throw Self.unknownOperator(name)
        }
        let path = try KeyPath(text)
        try checker.check(path, from: className)
        let operand = parts[2]
        let declared = checker.finalProperty(of: path, from: className)?.type
        switch op {
        case .equal, .notEqual:
            choices = []
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            guard operand.number != nil || operand.isString else {
                throw QueryDefinition.invalid("where", "'\(name)' compares with a number or a string")
            }
            try Self.check(operand, against: declared, path)
            choices = []
        case .in:
            guard case .array(let values) = operand, (1...QueryDefinition.maxInValues).contains(values.count) else {
                throw QueryDefinition.invalid("where", "'in' takes an array of 1 to 100 values")
            }
            choices = Set(values)
        case .prefix:
            guard operand.isString else { throw QueryDefinition.invalid("where", "'prefix' takes a string") }
            try Self.check(operand, against: declared, path)
            choices = []
        case .exists:
            guard case .bool = operand else { throw QueryDefinition.invalid("where", "'exists' takes true or false") }
            choices = []
        }
        self.path = path
        self.op = op
        self.operand = operand
    }

    /// An operator that is not one of the contract's, named as one (not as a request field).
    private static func unknownOperator(_ name: String) -> CoreError {
        let allowed = Operator.allCases.map(\.rawValue)
        var message = "'where': unknown operator '\(name)'"
        var details: JSONObject = ["field": "where", "operator": .string(name)]
        if let suggestion = Suggestion.closest(to: name, in: allowed) {
            message += "; did you mean '\(suggestion)'?"
            details["suggestion"] = .string(suggestion)
        }
        message += " (the operators: \(allowed.joined(separator: " ")))"
        return CoreError(.invalidRequest, message, details: details)
    }

    /// A number compared with a string property (or the reverse) could never match: refused.
    private static func check(_ operand: JSON, against type: PropertyType?, _ path: KeyPath) throws(CoreError) {
        let numeric = type == .number || type == .integer
        guard (numeric && operand.isString) || (type == .string && operand.number != nil) else { return }
        throw CoreError(
            .typeMismatch,
            "'\(path)' holds \(numeric ? "numbers" : "strings"); the operand is \(operand.typeNameWithArticle)",
            details: ["keyPath": .string(path.description)])
    }

    var json: JSON { .array([.string(path.description), .string(op.rawValue), operand]) }

    /// Whether `value` (the path's value on an object; missing reads as `null`) satisfies it.
    func holds(for value: JSON) -> Bool {
        switch op {
        case .equal: value == operand
        case .notEqual: value != operand
        case .in: choices.contains(value)
        case .exists: value.isNull != (operand == .bool(true))
        case .prefix:
            if case .string(let text) = value, case .string(let start) = operand {
                text.utf8.starts(with: start.utf8)
            } else {
                false
            }
        case .less, .lessOrEqual, .greater, .greaterOrEqual:
            if let order = SortValue.compareScalars(value, operand) {
                switch op {
                case .less: order < 0
                case .lessOrEqual: order <= 0
                case .greater: order > 0
                default: order >= 0
                }
            } else {
                false
            }
        }
    }
}

/// One key of `orderBy`: `[keyPath, "asc" or "desc"]` (the direction may be left out: `asc`).
struct QueryOrder: Sendable {
    let path: KeyPath
    let descending: Bool

    init(_ item: JSON, checker: KeyPathChecker, className: String?) throws(CoreError) {
        guard case .array(let parts) = item, (1...2).contains(parts.count), case .string(let text) = parts[0] else {
            throw QueryDefinition.invalid("orderBy", "holds [keyPath, \"asc\" or \"desc\"]")
        }
        switch parts.count == 2 ? parts[1] : .string("asc") {
        case .string("asc"): descending = false
        case .string("desc"): descending = true
        default: throw QueryDefinition.invalid("orderBy", "directions are \"asc\" or \"desc\"")
        }
        path = try KeyPath(text)
        try checker.check(path, from: className)
    }

    var json: JSON { .array([.string(path.description), .string(descending ? "desc" : "asc")]) }
}

extension JSON {
    var isString: Bool {
        if case .string = self { return true }
        return false
    }
}
