// MARK: - Collection operators

extension ObjectGraph {
    /// Applies `@op` to `collection`, mapping `rest` over its elements first.
    func aggregate(
        _ op: CollectionOperator, over collection: JSON, then rest: ArraySlice<KeyPath.Component>, depth: Int,
        trace: DependencyTrace? = nil, filter: ReadFilter? = nil
    ) throws(CoreError) -> JSON {
        let elements: [JSON]
        switch collection {
        case .array(let array): elements = array
        case .null: elements = []
        default:
            throw CoreError(.notACollection, "@\(op.rawValue) needs an array, not \(collection.typeNameWithArticle)")
        }
        if op == .count { return .int(elements.count) }
        var operands: [JSON] = []
        operands.reserveCapacity(elements.count)
        for element in elements {
            let value = try evaluate(
                rest, from: node(element, at: nil, trace: trace, filter: filter), depth: depth, trace: trace,
                filter: filter)
            if !value.isNull { operands.append(value) }
        }
        switch op {
        case .count: return .int(elements.count)
        case .sum: return try Self.sum(operands, op)
        case .avg:
            guard !operands.isEmpty, let total = try Self.sum(operands, op).number else { return .null }
            return .double(total / Double(operands.count))
        case .min, .max: return try Self.extreme(operands, op)
        case .unionOfObjects: return .array(operands)
        case .distinctUnionOfObjects:
            var seen = Set<JSON>()
            return .array(operands.filter { seen.insert($0).inserted })
        }
    }

    /// The sum: an integer while every operand is one (and it fits), else a number.
    private static func sum(_ operands: [JSON], _ op: CollectionOperator) throws(CoreError) -> JSON {
        var integer = 0
        var real = 0.0
        var isInteger = true
        for operand in operands {
            switch operand {
            case .int(let value):
                real += Double(value)
                if isInteger {
                    let (result, overflow) = integer.addingReportingOverflow(value)
                    if overflow { isInteger = false } else { integer = result }
                }
            case .double(let value):
                real += value
                isInteger = false
            default:
                throw CoreError(
                    .typeMismatch, "@\(op.rawValue) needs numbers, and found \(operand.typeNameWithArticle)")
            }
        }
        return isInteger ? .int(integer) : .double(real)
    }

    /// The least (or greatest) of numbers, or of strings; `null` when there are none.
    private static func extreme(_ operands: [JSON], _ op: CollectionOperator) throws(CoreError) -> JSON {
        guard var best = operands.first else { return .null }
        for operand in operands {  // the first is compared with itself: that checks its type
            guard let order = order(operand, best) else {
                throw CoreError(
                    .typeMismatch,
                    "@\(op.rawValue) compares numbers or strings, and found \(operand.typeNameWithArticle) and \(best.typeNameWithArticle)"
                )
            }
            if op == .min ? order < 0 : order > 0 { best = operand }
        }
        return best
    }

    /// -1, 0 or 1 for two numbers or two strings; nil for anything else.
    private static func order(_ a: JSON, _ b: JSON) -> Int? {
        switch (a, b) {
        case (.string(let x), .string(let y)): return x < y ? -1 : (x == y ? 0 : 1)
        default:
            guard let x = a.number, let y = b.number else { return nil }
            return x < y ? -1 : (x == y ? 0 : 1)
        }
    }
}
