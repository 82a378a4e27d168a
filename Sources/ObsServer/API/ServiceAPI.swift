import ObservationCore
import Synchronization

/// The `/v1` API and the operational endpoints, over one `Store`.
///
/// Handlers only translate: JSON in, a core call, JSON out. Semantics live in `ObservationCore`.
struct ServiceAPI: Sendable {
    let store: Store
    let counters: ServiceCounters
    let hub: StreamHub
    let timer: ServiceTimer

    /// Registers every route of the service.
    func register(in router: inout RouterBuilder) {
        registerOperations(in: &router)
        registerClasses(in: &router)
        registerObjects(in: &router)
        registerValues(in: &router)
        registerObservers(in: &router)
        registerStreams(in: &router)
    }
}

/// Process-wide counters for `/v1/stats`. Lock-free (atomics).
final class ServiceCounters: Sendable {
    let startedAt = ContinuousClock.now
    let requests = Atomic<Int>(0)

    var uptimeSeconds: Double {
        let elapsed = ContinuousClock.now - startedAt
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
