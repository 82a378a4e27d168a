import ObservationCore
import Synchronization

/// One Server-Sent Events stream over an event log (an observer's, or the admin log).
///
/// Sends what the log holds after its cursor, in batches (one write for many events),
/// then parks until the log has more. A heartbeat comment goes out when the hub asks
/// for one. A reader whose next event has left the log's buffer (it fell more than
/// the buffer behind) is cut off and counted as dropped; it resumes with Last-Event-ID.
final class EventStream: StreamBody {
    private struct State {
        var cursor: Int
        /// Formatted bytes not yet handed to the connection.
        var pending: [UInt8]
        var sentOffset = 0
        var heartbeatDue = false
        var token: Int?
        var wake: (@Sendable () -> Void)?
        var finished = false
    }

    let log: EventLog
    private let state: Locked<State>
    private let onFinish: @Sendable (EventStream) -> Void
    private let counters: StreamCounters

    /// A stream that first sends `prelude` (a reset and rebuild records), then the log after `cursor`.
    init(
        log: EventLog, cursor: Int, prelude: [Event], counters: StreamCounters,
        onFinish: @escaping @Sendable (EventStream) -> Void
    ) {
        self.log = log
        self.counters = counters
        self.onFinish = onFinish
        var bytes: [UInt8] = Array(": connected\n\n".utf8)
        for event in prelude { Self.format(event, into: &bytes) }
        state = Locked(State(cursor: cursor, pending: bytes))
    }

    func start(wake: @escaping @Sendable () -> Void) {
        let cursor = state.withLock { state in
            state.wake = wake
            return state.cursor
        }
        let token = log.attach(cursor: cursor, wake: wake)
        state.withLock { $0.token = token }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> StreamRead {
        state.withLock { state in
            if state.sentOffset == state.pending.count {
                state.pending.removeAll(keepingCapacity: true)
                state.sentOffset = 0
                switch log.read(after: state.cursor) {
                case .events(let events):
                    for event in events { Self.format(event, into: &state.pending) }
                    state.cursor = events.last?.id ?? state.cursor
                    if let token = state.token { log.advance(token, to: state.cursor) }
                    counters.events.add(events.count, ordering: .relaxed)
                    state.heartbeatDue = false
                case .gap:
                    if let token = state.token { log.detach(token, dropped: true) }
                    state.token = nil
                    counters.dropped.add(1, ordering: .relaxed)
                    return .end
                case .upToDate:
                    if log.isClosed { return .end }
                    guard state.heartbeatDue else { return .wait }
                    state.heartbeatDue = false
                    state.pending.append(contentsOf: Self.heartbeat)
                }
            }
            let count = min(buffer.count, state.pending.count - state.sentOffset)
            state.pending.withUnsafeBytes { bytes in
                buffer.copyMemory(
                    from: UnsafeRawBufferPointer(rebasing: bytes[state.sentOffset..<state.sentOffset + count]))
            }
            state.sentOffset += count
            return .bytes(count)
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

    /// Asks for a `: keep-alive` comment if nothing else is sent first, and wakes the stream.
    func heartbeat() {
        let wake = state.withLock { state in
            state.heartbeatDue = true
            return state.wake
        }
        wake?()
    }

    private static let heartbeat = Array(": keep-alive\n\n".utf8)

    /// `id: n` (when the event has one), `event: name`, `data: json`, blank line.
    static func format(_ event: Event, into bytes: inout [UInt8]) {
        if event.id > 0 {
            bytes.append(contentsOf: "id: ".utf8)
            bytes.append(contentsOf: String(event.id).utf8)
            bytes.append(0x0A)
        }
        bytes.append(contentsOf: "event: ".utf8)
        bytes.append(contentsOf: event.name.utf8)
        bytes.append(contentsOf: "\ndata: ".utf8)
        bytes.append(contentsOf: event.data)
        bytes.append(contentsOf: "\n\n".utf8)
    }
}

/// Totals across all streams, for `/v1/stats` and `/metrics`.
final class StreamCounters: Sendable {
    let events = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
}
