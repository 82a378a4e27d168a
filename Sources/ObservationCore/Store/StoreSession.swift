// MARK: - The store as one caller uses it

/// The store as one caller sees and changes it: every read goes through what the caller may
/// read, every command carries the caller's principal. The client-facing reads and commands
/// exist only here, so none compiles without a caller (`store.as(.admin)` names the admin).
///
/// A value: cheap to make per request; thread-safe as the store is.
public struct StoreSession: Sendable {
    public let store: Store
    public let principal: Principal

    /// Issues `action` now (the wall clock's time), as the session's caller, and executes it.
    public func issue(_ action: Command.Action) throws(CoreError) -> Outcome {
        try store.execute(Command(time: .now(), action, as: principal))
    }

    /// Reads under the store's lock, as the caller may (401 for a token that ended).
    func read<T>(_ body: (inout StoreState, Reader) throws(CoreError) -> T) throws(CoreError) -> T {
        try store.read { state throws(CoreError) in
            try Authorization.check(.read, by: principal, access: nil)
            let access = try state.access(of: principal, at: .now())
            let filter = state.readFilter(of: principal, access: access)
            return try body(&state, Reader(principal: principal, access: access, filter: filter))
        }
    }

    /// Decides `question` for the reader (see `Authorization`).
    func check(_ question: AccessQuestion, _ reader: Reader) throws(CoreError) {
        try Authorization.check(question, by: reader.principal, access: reader.access)
    }
}

/// Who reads, as the state resolved them for one read: the principal, what its token may do
/// (nil: everything) and the filter the graph is read through (nil: none).
struct Reader {
    let principal: Principal
    let access: Access?
    let filter: ReadFilter?
}

extension Store {
    /// The store as `principal` uses it.
    public func `as`(_ principal: Principal) -> StoreSession { StoreSession(store: self, principal: principal) }
}
