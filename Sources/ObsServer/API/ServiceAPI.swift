import ObservationCore
import Synchronization

/// The `/v1` API and the operational endpoints, over one `Store`.
///
/// Handlers only translate: JSON in, a core call, JSON out. Semantics live in `ObservationCore`.
struct ServiceAPI: Sendable {
    /// Where commands go and reads wait (memory, a data directory, a cluster).
    let replica: any Replica
    let counters: ServiceCounters
    let hub: StreamHub
    let metrics: RequestMetrics
    /// The longest JSON string a request body may hold (`--max-string-bytes`).
    let maxStringBytes: Int
    /// Deliveries to URLs (section 16), and where they may go (`--webhook-hosts`).
    let webhooks: WebhookDeliverer
    let webhookHosts: WebhookHosts

    /// The state, for what the server itself reads (figures, logs, deadlines).
    var store: Store { replica.store }

    /// The state as the request's caller reads and changes it (never without a caller).
    func store(_ parameters: RouteParameters) -> StoreSession { replica.store.as(parameters.caller.principal) }

    /// Registers every route of the service.
    func register(in router: inout RouterBuilder) {
        registerOperations(in: &router)
        registerClasses(in: &router)
        registerObjects(in: &router)
        registerValues(in: &router)
        registerObservers(in: &router)
        registerQueries(in: &router)
        registerStreams(in: &router)
        registerNotifications(in: &router)
        registerTransactions(in: &router)
        registerTokens(in: &router)
    }

    /// A request's JSON object body, with the service's string limit.
    func jsonBody(_ request: HTTPRequest, allowed: [String]) throws -> JSONBody {
        try JSONBody(request, allowed: allowed, maxStringBytes: maxStringBytes)
    }
}

/// Process-wide counters for `/v1/stats`. Lock-free (atomics).
final class ServiceCounters: Sendable {
    let startedAt = ContinuousClock.now
    private let startedNanos = BootClock.nanoseconds
    let requests = Atomic<Int>(0)
    /// When the last request was handled, in nanoseconds after `startedAt` (the idle queue waits for quiet).
    let lastRequestNanos = Atomic<Int64>(0)

    /// Counts a request. Its activity is marked when its handler returns (`recordActivity`),
    /// microseconds later even for an answer that waits: the handler returns at once then too.
    func recordRequest() {
        requests.add(1, ordering: .relaxed)
    }

    /// Marks the server busy now (a request arrived or was answered).
    func recordActivity() {
        lastRequestNanos.store(BootClock.nanoseconds - startedNanos, ordering: .relaxed)
    }

    var lastRequest: ContinuousClock.Instant {
        startedAt + .nanoseconds(lastRequestNanos.load(ordering: .relaxed))
    }

    var uptimeSeconds: Double {
        (ContinuousClock.now - startedAt).inSeconds
    }
}
