extension EventLog {
    /// What a stream finds when it reads.
    public enum ReadResult: Sendable {
        /// Events after the cursor, oldest first.
        case events([Event])
        /// Nothing after the cursor yet.
        case upToDate
        /// The event after the cursor has left the buffer; `oldest` is the oldest id still held.
        case gap(oldest: Int)
    }

    /// Where a new stream starts (`resumePoint`).
    public enum ResumePoint: Sendable, Equatable {
        /// Send the events after this id.
        case after(Int)
        /// The asked-for events are gone: `reset`, then the events after `cursor` (the last id now).
        case reset(oldestAvailable: Int, cursor: Int)
        /// The asked-for id is not one this log made (negative, or past its last id): `reset`
        /// too, never a stuck stream (section 7.2).
        case unknown(oldestAvailable: Int, cursor: Int)
    }
}
