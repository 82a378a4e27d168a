/// What applying a command answers: the data of the client's 2xx answer (a failure is the
/// `CoreError` the apply threw). The HTTP layer renders it; the determinism test digests it.
/// The cases with large payloads are `indirect` (one box, on the rare commands that make them), so
/// that an outcome is a few words: a write's outcome is copied several times on its way to the answer.
public enum Outcome: Sendable {
    /// Most writes: the revision they took.
    case revision(Int)
    /// Something deleted or removed (a class, an observer, registrations, subscriptions): the
    /// revision taken, nil when nothing was there to remove (unobserveAll of none).
    case removed(revision: Int?)
    indirect case classDefined(ClassSnapshot, created: Bool)
    indirect case objectCreated(ObjectSnapshot)
    indirect case objectDeleted(DeleteOutcome)
    indirect case observerCreated(ObserverSnapshot)
    /// A token made or changed (section 13); its secret is the server's to add, once.
    indirect case token(TokenSnapshot, created: Bool)
    /// A keepalive: when the lease now runs out (nil while a stream holds it).
    case leaseRenewed(expiresAt: Timestamp?)
    /// A delivery barrier was set at this revision (`progress`).
    case barrier(revision: Int)
    indirect case observed(ObserveResult)
    indirect case queried(QueryResult)
    indirect case subscribed(SubscriptionSnapshot, deduplicated: Bool, revision: Int?)
    indirect case posted(PostOutcome)
    /// A transaction applied (section 15).
    indirect case transaction(TransactionResult)
    /// Background changes: the observers that expired, the postings delivered.
    case expired([String])
    case delivered(Int)
    /// A stream opened: the log it reads.
    case streamOpened(EventLog)
    /// Bookkeeping that answers nothing (a stream closed, a restart).
    case done
    /// A retry under an idempotency key: what the first request was answered (it changed nothing).
    indirect case replayed(StoredAnswer)

    /// Whether the answer tells of stored state, and so may be sent only once that state is
    /// durable: all but a keepalive's lease and a barrier (neither is stored).
    public var reportsStoredState: Bool {
        switch self {
        case .leaseRenewed, .barrier: false
        default: true
        }
    }
}
