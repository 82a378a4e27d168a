// MARK: - Transactions (section 15): staged on the graph one by one, then their effects as one

extension StoreState {
    /// Applies a transaction: its `expect` conditions on the state before it, then each
    /// operation as its single request would be (authorized and checked on the state the ones
    /// before it left), each staged on the graph only. A refusal undoes what was staged (the
    /// objects touched, nothing else: no revision, record or event was made yet) and answers
    /// with the operation's index. Once all are staged, the transaction takes one revision and
    /// its effects are made as one change: records, query records, admin events, notifications.
    mutating func applyTransaction(
        _ transaction: Transaction, by principal: Principal, _ access: Access?, at time: Timestamp
    ) throws(CoreError) -> TransactionResult {
        try checkShape(of: transaction)
        for (index, expectation) in transaction.expect.enumerated() {
            do throws(CoreError) {
                try check(expectation, by: principal, access)
            } catch {
                throw error.at("expect", index)
            }
        }
        if transaction.operations.count == 1 { return try applyAlone(transaction, by: principal, at: time) }
        let revision = self.revision + 1
        var undo = GraphUndo()
        var staged: [StagedOperation] = []
        staged.reserveCapacity(transaction.operations.count)
        for (index, operation) in transaction.operations.enumerated() {
            do throws(CoreError) {
                _ = try authorize(operation, principal, at: time)
                staged.append(try stage(operation, revision: revision, undo: &undo, at: time))
            } catch {
                undo.restore(&graph)
                throw error.at("operation", index)
            }
        }
        _ = nextRevision()
        tx = transaction.id
        defer { tx = nil }
        let results = finish(staged, touched: undo.touched, revision: revision)
        return TransactionResult(revision: revision, id: transaction.id, results: results)
    }

    /// A transaction of one operation is that operation's single request (section 15: "each is
    /// what its single request does"), applied as it: nothing to stage, nothing to undo.
    private mutating func applyAlone(_ transaction: Transaction, by principal: Principal, at time: Timestamp)
        throws(CoreError) -> TransactionResult
    {
        let operation = transaction.operations[0]
        tx = transaction.id
        defer { tx = nil }
        let outcome: Outcome
        do throws(CoreError) {
            if case .post(_, _, _, let posting, _) = operation, posting != PostingStyle.now.rawValue {
                throw Self.queuedPosting(posting)
            }
            let access = try authorize(operation, principal, at: time)
            outcome = try perform(operation, by: principal, access, at: time)
        } catch {
            throw error.at("operation", 0)
        }
        let result: OperationResult
        switch outcome {
        case .objectCreated(let snapshot): result = .created(snapshot)
        case .objectDeleted(.releasePending(let retainedBy, _)): result = .releasePending(retainedBy: retainedBy)
        case .posted(.delivered(_, let count)): result = .delivered(count)
        default: result = .done
        }
        return TransactionResult(revision: revision, id: transaction.id, results: [result])
    }

    static func queuedPosting(_ posting: String) -> CoreError {
        CoreError(
            .invalidRequest, "a transaction posts now: posting '\(posting)' is for single requests",
            details: ["field": "posting"])
    }

    /// What a transaction is before any state is read: 1 to `maxTransactionOps` operations of
    /// the seven kinds, at most 100 expectations, an id of the id alphabet.
    private func checkShape(of transaction: Transaction) throws(CoreError) {
        if let id = transaction.id, !Names.isValidID(id) {
            throw CoreError(
                .invalidRequest, "a transaction's id is 1–128 of A–Z a–z 0–9 . _ ~ -", details: ["field": "id"])
        }
        guard !transaction.operations.isEmpty else {
            throw CoreError(
                .invalidRequest, "a transaction has at least one operation", details: ["field": "operations"])
        }
        guard transaction.operations.count <= limits.maxTransactionOps else {
            throw CoreError(
                .limitExceeded,
                "a transaction holds at most \(limits.maxTransactionOps) operations, not \(transaction.operations.count)",
                details: ["limit": .int(limits.maxTransactionOps)])
        }
        guard transaction.expect.count <= Transaction.maxExpectations else {
            throw CoreError(
                .invalidRequest, "a transaction holds at most \(Transaction.maxExpectations) expectations",
                details: ["field": "expect"])
        }
        for (index, operation) in transaction.operations.enumerated() where !operation.isTransactionOperation {
            throw CoreError(.invalidRequest, "'\(operation.kind)' is not a transaction's operation").at(
                "operation", index)
        }
    }

    /// Checks one operation and applies it to the graph alone (objects, their values and
    /// indexes), each object touched saved first in `undo`. `revision`: the one it will take.
    private mutating func stage(
        _ operation: Command.Action, revision: Int, undo: inout GraphUndo, at time: Timestamp
    ) throws(CoreError) -> StagedOperation {
        switch operation {
        case .setValue(let id, let keyPath, let value, let ifRevision):
            _ = try graph.existingObject(id)
            try undo.checkRevision(of: id, ifRevision, in: graph)
            let (target, _) = try graph.checkedTarget(value, at: try KeyPath(keyPath), of: id, ifRevision: nil)
            let change = write(at: target, storing: value)
            undo.save(target.objectID, in: graph)
            graph.store(value, at: target, revision: revision)
            return .wrote([change], toMany: nil, changed: [ValueChange(target: target, value: value)])
        case .patch(let id, let values, let ifRevision):
            _ = try graph.existingObject(id)
            try undo.checkRevision(of: id, ifRevision, in: graph)
            guard !values.isEmpty else { return .unchanged }
            let targets = try patchTargets(values, of: id)
            let writes = targets.map { write(at: $0.0, storing: $0.1) }
            undo.save(id, in: graph)
            for (target, value) in targets { graph.store(value, at: target, revision: revision) }
            return .wrote(writes, toMany: nil, changed: targets.map { ValueChange(target: $0.0, value: $0.1) })
        case .mutate(let id, let keyPath, let kind, let indexes, let values, let ifRevision):
            _ = try graph.existingObject(id)
            try undo.checkRevision(of: id, ifRevision, in: graph)
            let (target, mutation, before, after) = try checkedMutation(
                kind, indexes: indexes, values: values, at: keyPath, of: id, ifRevision: nil)
            let change = write(at: target, storing: .array(after))
            undo.save(target.objectID, in: graph)
            graph.store(.array(after), at: target, revision: revision)
            return .wrote(
                [change],
                toMany: ToManyChange(location: change.location, mutation: mutation, before: before, after: after),
                changed: [ValueChange(target: target, value: .array(after), extra: mutation.adminMembers)])
        case .createObject(let id, let className, let values, let generatedID, let owner):
            var object = try newObject(
                id: id, className: className, values: values, generatedID: generatedID, owner: owner, at: time)
            object.revision = revision
            undo.save(object.id, in: graph)
            graph.insert(object)
            return .created(object, snapshot(object))
        case .deleteObject(let id):
            _ = try graph.existingObject(id)
            undo.save(id, in: graph)
            let retainedBy = retainers(of: id)
            guard retainedBy.isEmpty else {
                let newly = graph.pendingRelease.insert(id).inserted
                return .releasePending(id, retainedBy: retainedBy, newly: newly)
            }
            graph.remove(id)
            return .deleted(id)
        case .notify(let id, let keyPaths):
            return .notified(id, try checkedNotification(id, keyPaths: keyPaths))
        case .post(let name, let object, let userInfo, let posting, let coalesce):
            guard posting == PostingStyle.now.rawValue else { throw Self.queuedPosting(posting) }
            guard coalesce.isEmpty else {
                throw CoreError(.invalidRequest, "coalesce applies to queued postings (asap, idle)")
            }
            try Self.checkNotification(name: name, object: object)
            return .posted(name: name, object: object, userInfo: userInfo)
        default:
            throw CoreError(.invalidRequest, "'\(operation.kind)' is not a transaction's operation")
        }
    }

    /// Whether an `expect` entry holds on the state before the transaction (412 when it does
    /// not). A scoped caller may expect only what it may read.
    private func check(_ expectation: Transaction.Expectation, by principal: Principal, _ access: Access?)
        throws(CoreError)
    {
        let object = graph.objects[expectation.object]
        let question = objectQuestion(.read, expectation.object)
        // A missing object it could read is simply missing: `exists: false` holds.
        if object != nil || Authorization.decide(question, by: principal, access: access) == .forbidden {
            try Authorization.check(question, by: principal, access: access)
        }
        let details: JSONObject = ["revision": object.map { .int($0.revision) } ?? .null]
        func failed(_ reason: String) -> CoreError {
            CoreError(.conditionFailed, "object '\(expectation.object)' \(reason)", details: details)
        }
        switch expectation.condition {
        case .exists(let wanted):
            guard (object != nil) == wanted else { throw failed(wanted ? "does not exist" : "exists") }
        case .ifRevision(let expected):
            guard let object, object.revision == expected else {
                throw CoreError(
                    .revisionMismatch,
                    "object '\(expectation.object)' is \(object.map { "at revision \($0.revision)" } ?? "missing"), "
                        + "not at \(expected)", details: details.adding("expected", .int(expected)))
            }
        case .matches(let conditions):
            guard case .array(let items) = conditions else {
                throw CoreError(.invalidRequest, "'where' holds conditions [keyPath, operator, operand]")
            }
            var parsed: [QueryCondition] = []
            for item in items {
                parsed.append(try QueryCondition(item, checker: graph.checker, className: object?.className))
            }
            guard let object else { throw failed("does not exist") }
            let filter = readFilter(of: principal, access: access)
            for condition in parsed {
                let value = (try? graph.read(condition.path, of: object.id, filter: filter)) ?? .null
                guard condition.holds(for: value) else { throw failed("does not match \(condition.json)") }
            }
        }
    }
}
