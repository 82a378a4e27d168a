import ObservationCore
import Synchronization

/// One Server-Sent Events stream over an event log (an observer's, or the admin log).
///
/// Sends what the log holds after its cursor, in batches (many events per write, no
/// more than `batchBytes` of them taken at a time), then parks until the log has more.
/// A heartbeat comment goes out when the hub asks for one. A reader whose next event
/// leaves the log's buffer (it fell more than the buffer behind) is cut off by the log
/// and counted as dropped; it resumes with Last-Event-ID.
///
/// Memory: the events a stream has taken but not sent are shared with the log (see
/// `StreamOutbox`); a rebuild after `reset` is produced a batch at a time as the client
/// reads it, never as a whole.
final class EventStream: StreamBody {
    private struct State {
        var cursor: Int
        var outbox = StreamOutbox()
        var rebuild: RebuildSource?
        var heartbeatDue = false
        var token: Int?
        var wake: (@Sendable () -> Void)?
        var abort: (@Sendable () -> Void)?
        var finished = false
    }

    /// The most event bytes a stream takes from its log (or its rebuild) at a time (at least one event).
    static let batchBytes = 64 * 1024

    let log: EventLog
    private let state: Locked<State>
    private let onFinish: @Sendable (EventStream) -> Void
    private let counters: StreamCounters

    /// A stream that first sends `prelude` (a `reset`), then `rebuild`'s records, then the log after `cursor`.
    init(
        log: EventLog, cursor: Int, prelude: [Event], rebuild: RebuildSource?, counters: StreamCounters,
        onFinish: @escaping @Sendable (EventStream) -> Void
    ) {
        self.log = log
        self.counters = counters
        self.onFinish = onFinish
        var initial = State(cursor: cursor, rebuild: rebuild)
        initial.outbox.append(text: Array(": connected\n\n".utf8))
        for event in prelude { initial.outbox.append(event) }
        state = Locked(initial)
    }

    func start(_ control: StreamControl) {
        let cursor = state.withLock { state in
            state.wake = control.wake
            state.abort = control.abort
            return state.cursor
        }
        let reader = EventLog.Reader(wake: control.wake) { [counters] in
            counters.dropped.add(1, ordering: .relaxed)
            control.abort()
        }
        let token = log.attach(cursor: cursor, reader: reader)
        state.withLock { $0.token = token }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> StreamRead {
        state.withLock { state in
            if state.outbox.isEmpty, let end = refill(&state) { return end }
            return .bytes(state.outbox.write(into: buffer))
        }
    }

    /// Takes the next batch into the outbox; returns how the stream goes on when there is none.
    private func refill(_ state: inout State) -> StreamRead? {
        if var rebuild = state.rebuild {
            let records = rebuild.next(maxBytes: Self.batchBytes)
            state.rebuild = records.isEmpty ? nil : rebuild
            for record in records { state.outbox.append(record) }
            if !records.isEmpty { return nil }
        }
        switch log.read(after: state.cursor, maxBytes: Self.batchBytes, advancing: state.token) {
        case .events(let events):
            for event in events { state.outbox.append(event) }
            state.cursor = events.last?.id ?? state.cursor
            counters.events.add(events.count, ordering: .relaxed)
            state.heartbeatDue = false
            return nil
        case .gap:
            // Cut off here, or already by the log (which counted it) when its next event left.
            if let token = state.token, log.detach(token, dropped: true) {
                counters.dropped.add(1, ordering: .relaxed)
            }
            state.token = nil
            return .end
        case .upToDate:
            if log.isClosed { return .end }
            guard state.heartbeatDue else { return .wait }
            state.heartbeatDue = false
            state.outbox.append(text: Self.heartbeat)
            return nil
        }
    }

    func finish() {
        let token = state.withLock { state -> Int? in
            guard !state.finished else { return nil }
            state.finished = true
            defer { state.token = nil }
            return state.token
        }
        if let token { log.detach(token) }
        onFinish(self)
    }

    /// Closes the connection now.
    func abort() {
        state.withLock { $0.abort }?()
    }

    /// Asks for a `: keep-alive` comment if nothing else is sent first, and wakes the stream.
    func heartbeat() {
        let wake = state.withLock { state in
            state.heartbeatDue = true
            return state.wake
        }
        wake?()
    }

    private static let heartbeat = Array(": keep-alive\n\n".utf8)
}

/// The records that let a client rebuild its state after `reset` (section 7), produced a
/// batch at a time: one `change` record with `"initial": true` per registration, in
/// registration order, each read when its batch is taken.
struct RebuildSource: Sendable {
    /// The records after the registration with sequence `after`, up to about `maxBytes`;
    /// and the sequence of the last one (nil when there are no more).
    typealias Produce = @Sendable (_ after: Int, _ maxBytes: Int) -> (records: [Event], last: Int)?

    private let produce: Produce
    private var after = 0

    init(_ produce: @escaping Produce) { self.produce = produce }

    /// The next batch; empty when the rebuild is done.
    mutating func next(maxBytes: Int) -> [Event] {
        guard let (records, last) = produce(after, maxBytes) else { return [] }
        after = last
        return records
    }
}

/// Totals across all streams, for `/v1/stats` and `/metrics`.
final class StreamCounters: Sendable {
    let events = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
}
