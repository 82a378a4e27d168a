import Foundation
import ObservationCore

/// Pushes delivering observers' events to their URLs (section 16).
///
/// Every delivery runs on the `HTTPClient`'s one thread: its turn hook reads batches from the
/// observers' logs (`EventPoll`, the reads a poll makes: the same events, `reset` and the
/// rebuild), sends them, and acts on each answer as the observer's `DeliveryMachine` says,
/// recording an acknowledgement as an `acknowledge` command (`issue`). An idle delivery is a
/// one-shot waiter in its log; a retry is a deadline the thread sleeps until. A slow or dead
/// URL holds only its own observer: requests of others go out beside it, and nothing here runs
/// on a worker or under the store's lock.
///
/// Thread-safety: `state` is changed on the client's thread only; other threads read it
/// (`status`, `figures`) or mark observers woken.
final class WebhookDeliverer: Sendable {
    struct Delivery: Sendable {
        let target: DeliveryTarget
        let key: [UInt8]
        let log: EventLog
        var machine: DeliveryMachine
        /// The retry the thread must wake for.
        var dueAt: Timestamp?
    }

    /// Deliveries by outcome, and the events acknowledged (`/metrics`).
    struct Figures: Sendable {
        /// Answered 2xx.
        var delivered = 0
        /// Answered with another status.
        var rejected = 0
        /// No answer: a timeout, a refused or closed connection, an address not allowed.
        var failed = 0
        var eventsAcknowledged = 0
    }

    private struct State: Sendable {
        var deliveries: [String: Delivery] = [:]
        /// Observers whose log has something new (or closed).
        var woken: Set<String> = []
        /// The delivering observers may have changed: read them from the store.
        var refresh = true
        var figures = Figures()
    }

    private let client = HTTPClient()
    private let state = Locked(State())
    private let store: Store
    private let hosts: WebhookHosts
    /// Issues a background command (the acknowledged cursor) without waiting for it.
    private let issue: @Sendable (Command.Action) -> Void
    /// Whether this server delivers now (a cluster node: while it is the keeper).
    private let active: @Sendable () -> Bool

    init(
        store: Store, hosts: WebhookHosts, issue: @escaping @Sendable (Command.Action) -> Void,
        active: @escaping @Sendable () -> Bool = { true }
    ) {
        self.store = store
        self.hosts = hosts
        self.issue = issue
        self.active = active
    }

    func start() {
        client.onTurn { [weak self] in self?.turn() }
        client.start()
    }

    func stop() { client.stop() }

    /// The delivering observers may have changed (one made, removed, or a token ended).
    func refresh() {
        state.withLock { $0.refresh = true }
        client.wake()
    }

    var figures: Figures { state.withLock { $0.figures } }

    /// How many observers this server delivers now.
    var count: Int { state.withLock { $0.deliveries.count } }

    /// Whether this server delivers now (a cluster node: while it is the keeper).
    var isActive: Bool { active() }

    /// Events waiting in every delivering observer's buffer, unacknowledged.
    var backlog: Int {
        state.withLock { $0.deliveries.values.map { ($0.log, $0.machine.acknowledged) } }
            .reduce(0) { $0 + max(0, $1.0.visibleID - $1.1) }
    }

    /// `delivery` of `GET /v1/observers/{id}`, as this server sees it (nil: it does not deliver it now).
    func status(of id: String) -> JSONObject? {
        guard let delivery = state.withLock({ $0.deliveries[id] }) else { return nil }
        return Self.members(of: delivery.machine, url: delivery.target.url, visible: delivery.log.visibleID)
    }

    /// Built member by member: Swift 6.3's optimizer crashed (CopyPropagation) on the literal.
    private static func members(of machine: DeliveryMachine, url: String, visible: Int) -> JSONObject {
        var members: JSONObject = [:]
        members["url"] = .string(url)
        members["state"] = .string(machine.stateName)
        members["acknowledged"] = .int(machine.acknowledged)
        members["backlog"] = .int(max(0, visible - machine.acknowledged))
        members["attempts"] = .int(machine.attempts)
        members["lastStatus"] = JSON.null
        if let status = machine.lastStatus { members["lastStatus"] = .int(status) }
        members["lastError"] = JSON.null
        if let error = machine.lastError { members["lastError"] = .string(error) }
        members["nextAttemptAt"] = JSON.null
        if let next = machine.nextAttemptAt { members["nextAttemptAt"] = .string(next.rfc3339) }
        return members
    }

    // MARK: - The client's thread

    /// One turn: take in changes, move every delivery that has something to do; returns how
    /// long the thread may sleep (until the next retry).
    private func turn() -> Duration? {
        let refresh = state.withLock { state in
            defer { state.refresh = false }
            return state.refresh
        }
        guard active() else {
            // Another node delivers: forget the machines; the state's cursor is where to start again.
            state.withLock { state in
                if !state.deliveries.isEmpty { state.deliveries.removeAll() }
                state.refresh = true
            }
            return .seconds(1)
        }
        if refresh { synchronize() }
        // After the synchronization, which wakes the observers it adds.
        let woken = state.withLock { state in
            defer { state.woken.removeAll() }
            return state.woken
        }
        let now = Timestamp.now()
        var next: Timestamp?
        for id in state.withLock({ $0.deliveries.keys.sorted() }) {
            guard var delivery = state.withLock({ $0.deliveries[id] }) else { continue }
            if woken.contains(id) || delivery.dueAt.map({ $0 <= now }) ?? false {
                delivery.dueAt = nil
                run(&delivery, id, delivery.machine.poll(now: now))
                put(delivery, id)
            }
            if let due = delivery.dueAt, next.map({ due < $0 }) ?? true { next = due }
        }
        return next.map { .milliseconds(max(0, $0.milliseconds - Timestamp.now().milliseconds)) }
    }

    /// Takes the delivering observers from the store: new ones start from their acknowledged
    /// cursor, gone ones end.
    private func synchronize() {
        let current = store.deliveringObservers()
        let known = state.withLock { Set($0.deliveries.keys) }
        state.withLock { state in
            let ids = Set(current.map(\.id))
            for id in known where !ids.contains(id) { state.deliveries[id] = nil }
            for observer in current where !known.contains(observer.id) {
                state.deliveries[observer.id] = Delivery(
                    target: observer.target, key: WebhookSignature.key(of: observer.target.secret) ?? [],
                    log: observer.log, machine: DeliveryMachine(acknowledged: observer.acknowledged))
                state.woken.insert(observer.id)
            }
        }
    }

    private func woke(_ id: String) {
        state.withLock { _ = $0.woken.insert(id) }
        client.wake()
    }

    /// Writes a delivery back (or drops it once ended).
    private func put(_ delivery: Delivery, _ id: String) {
        state.withLock { state in
            guard state.deliveries[id] != nil else { return }  // gone meanwhile
            state.deliveries[id] = delivery.machine.phase == .ended ? nil : delivery
        }
    }

    /// Does what the machine asks until it waits.
    private func run(_ delivery: inout Delivery, _ id: String, _ first: DeliveryMachine.Action) {
        var action = first
        for _ in 0..<8 {
            switch action {
            case .read(let after, let rebuildAfter):
                action = delivery.machine.read(batch(id, delivery, after: after, rebuildAfter: rebuildAfter))
            case .send(let batch, let attempt):
                guard !delivery.log.isClosed else { return delivery.machine.end() }  // removed meanwhile
                send(id, delivery, batch, attempt: attempt)
                return
            case .acknowledge(let through):
                issue(.acknowledge(observer: id, through: through))
                action = delivery.machine.poll(now: .now())
            case .waitForEvents(let after):
                guard !delivery.log.isClosed else { return delivery.machine.end() }
                guard delivery.log.waitForEvents(after: after, { [weak self] in self?.woke(id) }) == nil else { return }
                action = delivery.machine.poll(now: .now())  // something came meanwhile
            case .wake(let at):
                delivery.dueAt = at
                return
            case .none:
                return
            }
        }
        woke(id)  // still busy: go on at the next turn
    }

    /// The next batch after `after`, as the observer's poll would answer it; nil: nothing new.
    private func batch(_ id: String, _ delivery: Delivery, after: Int, rebuildAfter: Int?) -> DeliveryMachine.Batch? {
        let query = PollQuery(after: after, wait: 0, limit: delivery.target.maxBatch, rebuildAfter: rebuildAfter)
        let poll = EventPoll(log: delivery.log, query: query) { [store] after, maxBytes, limit in
            store.rebuildRecords(of: id, after: after, maxBytes: maxBytes, limit: limit)
        }
        guard case .answer(let answer) = poll.look(), !answer.events.isEmpty else { return nil }
        return DeliveryMachine.Batch(
            through: answer.lastEventID, count: answer.events.count, rebuildAfter: answer.rebuildAfter,
            body: Self.body(observer: id, answer.events))
    }

    private func send(_ id: String, _ delivery: Delivery, _ batch: DeliveryMachine.Batch, attempt: Int) {
        let webhookID = "\(id):\(batch.through)"
        let timestamp = Int64(Date().timeIntervalSince1970)
        let signature = WebhookSignature.sign(key: delivery.key, id: webhookID, timestamp: timestamp, body: batch.body)
        let request = OutboundRequest(
            url: delivery.target.url,
            headers: [
                ("webhook-id", webhookID), ("webhook-timestamp", String(timestamp)), ("webhook-signature", signature),
            ],
            body: batch.body, timeout: .seconds(delivery.target.timeout),
            permits: { [hosts] host, port in hosts.permits(host: host, port: port) })
        client.send(request) { [weak self] result in self?.completed(id, attempt: attempt, result, events: batch.count)
        }
    }

    /// An attempt ended (on the client's thread).
    private func completed(_ id: String, attempt: Int, _ result: OutboundResult, events: Int) {
        guard var delivery = state.withLock({ $0.deliveries[id] }) else { return }
        let action = delivery.machine.completed(
            attempt: attempt, result, now: .now(), random: Double.random(in: 0..<1))
        state.withLock { state in
            switch result {
            case .status(let status) where (200...299).contains(status):
                state.figures.delivered += 1
                state.figures.eventsAcknowledged += events
            case .status: state.figures.rejected += 1
            case .failed: state.figures.failed += 1
            }
        }
        run(&delivery, id, action)
        put(delivery, id)
    }

    /// `{"observer": id, "events": [{"id": "17", "event": "change", "data": {…}}, …]}`: an event
    /// without an id (`reset`, a rebuild's records) has no `id` member, as in NDJSON.
    static func body(observer: String, _ events: [Event]) -> [UInt8] {
        var bytes = Array("{\"observer\":".utf8)
        bytes += JSONWriter.encode { $0.write(observer) }
        bytes += Array(",\"events\":[".utf8)
        for (index, event) in events.map(\.materialized).enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(UInt8(ascii: "{"))
            if event.id > 0 { bytes += Array("\"id\":\"\(event.id)\",".utf8) }
            bytes += Array("\"event\":\"\(event.name)\",\"data\":".utf8)  // event names are plain ASCII words
            bytes += event.data
            bytes.append(UInt8(ascii: "}"))
        }
        bytes += Array("]}".utf8)
        return bytes
    }
}
