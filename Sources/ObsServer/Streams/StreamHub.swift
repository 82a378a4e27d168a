import ObservationCore

/// The open event streams: heartbeats go to all of them; each one's end is reported to the store.
/// And the polls waiting for their first event, which count as streams while they wait.
final class StreamHub: Sendable {
    private let streams = Locked<[ObjectIdentifier: EventStream]>([:])
    let counters = StreamCounters()
    let polls = WaitingPolls()

    func add(_ stream: EventStream) {
        streams.withLock { $0[ObjectIdentifier(stream)] = stream }
    }

    func remove(_ stream: EventStream) {
        streams.withLock { $0[ObjectIdentifier(stream)] = nil }
    }

    /// The streams open on this server, waiting polls included.
    var count: Int { streams.withLock { $0.count } + polls.count }

    /// Closes every stream now, and answers every waiting poll 503 (a cluster node that lost its
    /// registration: clients resume elsewhere).
    func closeAll() {
        for stream in streams.withLock({ Array($0.values) }) { stream.abort() }
        polls.cutOff()
    }

    /// Sends a keep-alive comment on every stream that has nothing else to send.
    func heartbeat() {
        for stream in streams.withLock({ Array($0.values) }) { stream.heartbeat() }
    }
}
