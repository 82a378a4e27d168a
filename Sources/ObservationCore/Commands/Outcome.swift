/// What applying a command answers: the data of the client's 2xx answer (a failure is the
/// `CoreError` the apply threw). The HTTP layer renders it; the determinism test digests it.
public enum Outcome: Sendable {
    /// Most writes: the revision they took.
    case revision(Int)
    /// Something deleted or removed (a class, an observer, registrations, subscriptions): the
    /// revision taken, nil when nothing was there to remove (unobserveAll of none).
    case removed(revision: Int?)
    case classDefined(ClassSnapshot, created: Bool)
    case objectCreated(ObjectSnapshot)
    case objectDeleted(DeleteOutcome)
    case observerCreated(ObserverSnapshot)
    /// A token made or changed (section 13); its secret is the server's to add, once.
    case token(TokenSnapshot, created: Bool)
    /// A keepalive: when the lease now runs out (nil while a stream holds it).
    case leaseRenewed(expiresAt: Timestamp?)
    /// A delivery barrier was set at this revision (`progress`).
    case barrier(revision: Int)
    case observed(ObserveResult)
    case queried(QueryResult)
    case subscribed(SubscriptionSnapshot, deduplicated: Bool, revision: Int?)
    case posted(PostOutcome)
    /// A transaction applied (section 15).
    case transaction(TransactionResult)
    /// Background changes: the observers that expired, the postings delivered.
    case expired([String])
    case delivered(Int)
    /// A stream opened: the log it reads.
    case streamOpened(EventLog)
    /// Bookkeeping that answers nothing (a stream closed, a restart).
    case done
    /// A retry under an idempotency key: what the first request was answered (it changed nothing).
    case replayed(StoredAnswer)

    /// Whether the answer tells of stored state, and so may be sent only once that state is
    /// durable: all but a keepalive's lease and a barrier (neither is stored).
    public var reportsStoredState: Bool {
        switch self {
        case .leaseRenewed, .barrier: false
        default: true
        }
    }
}
