import ObservationCore

/// The open event streams: heartbeats go to all of them; each one's end is reported to the store.
final class StreamHub: Sendable {
    private let streams = Locked<[ObjectIdentifier: EventStream]>([:])
    let counters = StreamCounters()

    func add(_ stream: EventStream) {
        streams.withLock { $0[ObjectIdentifier(stream)] = stream }
    }

    func remove(_ stream: EventStream) {
        streams.withLock { $0[ObjectIdentifier(stream)] = nil }
    }

    /// Sends a keep-alive comment on every stream that has nothing else to send.
    func heartbeat() {
        for stream in streams.withLock({ Array($0.values) }) { stream.heartbeat() }
    }
}
