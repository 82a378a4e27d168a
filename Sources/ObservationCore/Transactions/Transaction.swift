/// Several writes applied as one (section 15): all of them or none, under one revision.
///
/// A decoded request, like every command: its operations are actions of the seven kinds a
/// transaction may hold (`setValue`, `patch`, `createObject`, `mutate`, `deleteObject`, `post`,
/// `notify`), and applying it checks everything else.
public struct Transaction: Sendable, Equatable {
    /// The client's name for it: the `tx` member of what it causes, and its idempotency key.
    public let id: String?
    /// Conditions on the state before it, all of which must hold.
    public let expect: [Expectation]
    public let operations: [Command.Action]

    /// At most this many `expect` conditions (the contract's bound, not a setting).
    public static let maxExpectations = 100

    public init(id: String?, expect: [Expectation], operations: [Command.Action]) {
        self.id = id
        self.expect = expect
        self.operations = operations
    }

    /// The operation kinds in the request's spelling (`op`), and the actions they are.
    public static let operationKinds = ["set", "patch", "create", "mutate", "delete", "post", "notify"]
}

extension Transaction {
    /// One `expect` entry: a condition on one object before the transaction.
    public struct Expectation: Sendable, Equatable {
        public enum Condition: Sendable, Equatable {
            /// The object's revision is this one.
            case ifRevision(Int)
            /// The object exists (true) or does not (false).
            case exists(Bool)
            /// Section 12's conditions (`[[keyPath, operator, operand], …]`) hold on its values.
            case matches(JSON)
        }

        public let object: String
        public let condition: Condition

        public init(object: String, _ condition: Condition) {
            self.object = object
            self.condition = condition
        }
    }
}

/// What one operation of a transaction answered (its single request's body).
public enum OperationResult: Sendable, Equatable {
    /// `{}`: a set, patch, mutate, notify or delete done.
    case done
    /// The object as the operation created it.
    case created(ObjectSnapshot)
    /// A delete of a retained object (section 6.5).
    case releasePending(retainedBy: [String])
    /// A post: how many subscriptions it reached.
    case delivered(Int)
}

/// What a transaction answered.
public struct TransactionResult: Sendable, Equatable {
    public let revision: Int
    public let id: String?
    public let results: [OperationResult]
}

extension CoreError {
    /// The error of the transaction's operation `index` (or `expect` entry): its own, with the index.
    public func at(_ member: String, _ index: Int) -> CoreError {
        CoreError(code, "\(member) \(index): \(message)", details: details.adding(member, .int(index)))
    }
}

extension StoreSession {
    /// Applies several writes as one (section 15).
    public func transaction(_ transaction: Transaction) throws(CoreError) -> TransactionResult {
        expected(try issue(.transaction(transaction))) {
            if case .transaction(let result) = $0 { result } else { nil }
        }
    }
}
