import ObservationCore

/// One delivering observer's deliveries (section 16): which batch is out, when it is tried
/// again, and how far the receiver has acknowledged. Pure: every input (the time, the random
/// number behind the jitter, what a read found, how a request ended) is passed in, and every
/// transition returns what the driver must do, which it does with no lock held.
///
/// One request at a time: a batch goes out, and nothing else until it is answered 2xx (then
/// the cursor moves to its last event and the next batch is read) or fails (then the same
/// batch, with the same `webhook-id`, goes again after the backoff).
struct DeliveryMachine: Sendable {
    /// A batch as it goes out: the same bytes on every attempt.
    struct Batch: Sendable, Equatable {
        /// The event id its acknowledgement moves the cursor to (`webhook-id`'s second part).
        let through: Int
        /// How many events it holds.
        let count: Int
        /// Where a rebuild that did not fit goes on (nil: none, or complete).
        let rebuildAfter: Int?
        /// The request's body.
        let body: [UInt8]
    }

    enum Phase: Sendable, Equatable {
        /// Nothing out: the next batch is read when there is one.
        case idle
        /// `attempt` of `batch` is out.
        case sending(Batch, attempt: Int)
        /// `batch` failed `attempt` times; it goes again at `at`.
        case retrying(Batch, attempt: Int, at: Timestamp)
        /// Deliveries ended (the observer was removed, its token revoked or expired).
        case ended
    }

    /// What the driver must do.
    enum Action: Sendable, Equatable {
        /// Read the batch after `after` (and the rebuild after `rebuildAfter`), then call `read`.
        case read(after: Int, rebuildAfter: Int?)
        /// Send this attempt; report its end to `completed`.
        case send(Batch, attempt: Int)
        /// Record the acknowledged cursor (a command), then read the next batch.
        case acknowledge(through: Int)
        /// Nothing new: look again when the log has an event after `after`.
        case waitForEvents(after: Int)
        /// Look again at `at` (`poll`).
        case wake(at: Timestamp)
        case none
    }

    static let firstDelay: Int64 = 500
    static let maxDelay: Int64 = 60_000

    private(set) var phase: Phase = .idle
    /// The last event the receiver acknowledged.
    private(set) var acknowledged: Int
    /// A rebuild that goes on after the last acknowledged batch.
    private(set) var rebuildAfter: Int?
    /// The last answer's status (nil: none yet, or the last attempt got no answer).
    private(set) var lastStatus: Int?
    private(set) var lastError: String?

    init(acknowledged: Int) { self.acknowledged = acknowledged }

    var stateName: String {
        switch phase {
        case .idle, .ended: "idle"
        case .sending: "sending"
        case .retrying: "retrying"
        }
    }

    /// Attempts of the current batch (0 when none is out).
    var attempts: Int {
        switch phase {
        case .idle, .ended: 0
        case .sending(_, let attempt), .retrying(_, let attempt, _): attempt
        }
    }

    var nextAttemptAt: Timestamp? {
        if case .retrying(_, _, let at) = phase { at } else { nil }
    }

    /// The log may have something new, or a retry may be due: what to do now.
    mutating func poll(now: Timestamp) -> Action {
        switch phase {
        case .idle: return .read(after: acknowledged, rebuildAfter: rebuildAfter)
        case .sending, .ended: return .none
        case .retrying(let batch, let attempt, let at):
            guard now >= at else { return .wake(at: at) }
            phase = .sending(batch, attempt: attempt + 1)
            return .send(batch, attempt: attempt + 1)
        }
    }

    /// What a `read` found: a batch to send, or nothing after the cursor.
    mutating func read(_ batch: Batch?) -> Action {
        guard case .idle = phase else { return .none }
        guard let batch else { return .waitForEvents(after: acknowledged) }
        phase = .sending(batch, attempt: 1)
        return .send(batch, attempt: 1)
    }

    /// How attempt `attempt` ended. `random` is in 0..<1: the jitter (±20 %) it draws.
    /// A report of an attempt that is not the one out (late, or after the end) changes nothing.
    mutating func completed(attempt: Int, _ result: OutboundResult, now: Timestamp, random: Double) -> Action {
        guard case .sending(let batch, let current) = phase, current == attempt else { return .none }
        switch result {
        case .status(let status) where (200...299).contains(status):
            lastStatus = status
            lastError = nil
            acknowledged = batch.through
            rebuildAfter = batch.rebuildAfter
            phase = .idle
            return .acknowledge(through: batch.through)
        case .status(let status):
            lastStatus = status
            lastError = "status \(status)"
        case .failed(let message):
            lastStatus = nil
            lastError = message
        }
        let at = Timestamp(milliseconds: now.milliseconds + Self.delay(afterAttempt: attempt, random: random))
        phase = .retrying(batch, attempt: attempt, at: at)
        return .wake(at: at)
    }

    /// Deliveries end (the observer is gone, or its token was revoked or expired): nothing
    /// more is sent, and a request still out is forgotten.
    mutating func end() { phase = .ended }

    /// The wait after `attempt` failures: 0.5 s doubling up to 60 s, times 0.8–1.2.
    static func delay(afterAttempt attempt: Int, random: Double) -> Int64 {
        let doublings = min(max(attempt - 1, 0), 16)
        let base = min(firstDelay << doublings, maxDelay)
        return Int64((Double(base) * (0.8 + 0.4 * min(max(random, 0), 1))).rounded())
    }
}
