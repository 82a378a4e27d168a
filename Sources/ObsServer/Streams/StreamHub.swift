import ObservationCore

/// The open event streams: heartbeats go to all of them; each one's end is reported to the store.
/// And the polls waiting for their first event, which count as streams while they wait.
/// Streams opened with a scoped token end with `revoked` when it does (section 13): at once
/// when the state says so (`revoke`), at a JWT's `exp` when the timer looks (`expireCredentials`).
final class StreamHub: Sendable {
    private struct State {
        var streams: [ObjectIdentifier: EventStream] = [:]
        /// Streams opened with a JWT, by when it expires (ms), keyed by their identifier.
        var expiries = DeadlineHeap<Int64>()
        var expiring: [String: EventStream] = [:]
    }

    private let state = Locked(State())
    let counters = StreamCounters()
    let polls = WaitingPolls()
    /// Told when a stream's JWT expires before every other's (the timer's signal to look again).
    private let earlier = Locked<TimerCall?>(nil)

    func onEarlierExpiry(_ handler: @escaping @Sendable () -> Void) {
        earlier.withLock { $0 = TimerCall(call: handler) }
    }

    func add(_ stream: EventStream) {
        let first = state.withLock { state -> Bool in
            state.streams[ObjectIdentifier(stream)] = stream
            guard let expiresAt = stream.credential?.expiresAt else { return false }
            let first = state.expiries.first.map { expiresAt.milliseconds < $0.deadline } ?? true
            state.expiries.schedule(Self.key(stream), at: expiresAt.milliseconds)
            state.expiring[Self.key(stream)] = stream
            return first
        }
        if first { earlier.withLock { $0 }?.call() }
    }

    func remove(_ stream: EventStream) {
        state.withLock { state in
            state.streams[ObjectIdentifier(stream)] = nil
            if stream.credential?.expiresAt != nil {
                state.expiries.cancel(Self.key(stream))
                state.expiring[Self.key(stream)] = nil
            }
        }
    }

    private static func key(_ stream: EventStream) -> String { String(describing: ObjectIdentifier(stream)) }

    /// The streams open on this server, waiting polls included.
    var count: Int { state.withLock { $0.streams.count } + polls.count }

    /// Closes every stream now, and answers every waiting poll 503 (a cluster node that lost its
    /// registration: clients resume elsewhere).
    func closeAll() {
        for stream in all { stream.abort() }
        polls.cutOff()
    }

    /// Sends a keep-alive comment on every stream that has nothing else to send.
    func heartbeat() {
        for stream in all { stream.heartbeat() }
    }

    private var all: [EventStream] { state.withLock { Array($0.streams.values) } }

    /// Ends the streams and waiting polls opened with these tokens (revoked or expired).
    func revoke(_ ended: [(id: String, reason: String)]) {
        let reasons = Dictionary(ended.map { ($0.id, $0.reason) }, uniquingKeysWith: { _, last in last })
        for stream in all {
            guard let credential = stream.credential, let reason = reasons[credential.tokenID] else { continue }
            stream.revoke(credential.revokedEvent(reason))
        }
        polls.revoke(reasons)
    }

    /// Ends the streams whose JWT expired by `now`; returns when the next one does.
    func expireCredentials(now: Timestamp) -> Timestamp? {
        let (due, next) = state.withLock { state -> ([EventStream], Int64?) in
            var due: [EventStream] = []
            while let first = state.expiries.first, first.deadline <= now.milliseconds {
                _ = state.expiries.popFirst()
                if let stream = state.expiring.removeValue(forKey: first.id) { due.append(stream) }
            }
            return (due, state.expiries.first?.deadline)
        }
        for stream in due { stream.credential.map { stream.revoke($0.revokedEvent("expired")) } }
        return next.map(Timestamp.init(milliseconds:))
    }
}

/// A closure in a struct, so that `Locked` holds it in its concrete representation.
struct TimerCall: Sendable {
    let call: @Sendable () -> Void
}
