/// What a scope may allow (section 13). The first five act on objects, the last two on
/// notification names.
public enum AccessAction: String, Sendable, CaseIterable {
    case read, observe, write, create, delete, post, subscribe

    /// Whether it acts on objects (matched by `class`, `ids`, `owned`) rather than names.
    public var isObjectAction: Bool {
        switch self {
        case .read, .observe, .write, .create, .delete: true
        case .post, .subscribe: false
        }
    }

    var bit: UInt8 {
        switch self {
        case .read: 1
        case .observe: 2
        case .write: 4
        case .create: 8
        case .delete: 16
        case .post: 32
        case .subscribe: 64
        }
    }
}

/// A set of actions, as one byte.
public struct AccessActions: Sendable, Hashable {
    var bits: UInt8 = 0

    public init() {}

    public init(_ actions: some Sequence<AccessAction>) {
        for action in actions { bits |= action.bit }
    }

    public func contains(_ action: AccessAction) -> Bool { bits & action.bit != 0 }
    public var isEmpty: Bool { bits == 0 }
    mutating func formUnion(_ other: AccessActions) { bits |= other.bits }
    /// In the contract's order.
    public var list: [AccessAction] { AccessAction.allCases.filter(contains) }
}
