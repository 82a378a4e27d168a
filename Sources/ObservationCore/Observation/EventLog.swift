/// The bounded replay buffer of one observer (or of the admin stream), and the
/// cursors of the streams reading it.
///
/// Events get gapless ids 1, 2, 3, … in the order they are appended. The log
/// keeps the last `capacity` of them; a stream whose next event has already
/// left the buffer must be cut off (it then resumes, and gets `reset`).
///
/// Thread-safety: its own lock. Appends happen under the store's lock (lock
/// order: store, then log), reads from stream threads take only this lock.
/// Wakers run after the lock is released.
public final class EventLog: Sendable {
    /// What a stream finds when it reads.
    public enum ReadResult: Sendable {
        /// Events after the cursor, oldest first (at most the requested count).
        case events([Event])
        /// Nothing after the cursor yet.
        case upToDate
        /// The event after the cursor has left the buffer; `oldest` is the oldest id still held.
        case gap(oldest: Int)
    }

    private struct State: Sendable {
        var buffer: [Event] = []
        /// Index in `buffer` of the oldest event once the buffer is full (it is a ring then).
        var start = 0
        var lastID = 0
        /// The last id streams may send: ids past it wait for their change to be durable.
        var visibleID = 0
        /// Whether appends wait for `publish` to become visible (a persistent store).
        var gated = false
        var capacity: Int
        var wakers: [Int: @Sendable () -> Void] = [:]
        var cursors: [Int: Int] = [:]
        var nextStreamToken = 1
        /// The highest id any stream has been handed, for `backlog` while none is connected.
        var highestSent = 0
        var droppedStreams = 0
        var closed = false

        var oldestID: Int { lastID - buffer.count + 1 }

        func event(withID id: Int) -> Event {
            buffer[(start + id - oldestID) % buffer.count]
        }
    }

    private let state: Locked<State>

    /// A log whose ids start after `lastID`. A `gated` log shows an event to streams only
    /// once `publish` reaches it (when the change that made it is durable).
    public init(capacity: Int, lastID: Int = 0, gated: Bool = false) {
        state = Locked(State(capacity: max(1, capacity), highestSent: lastID))
        state.withLock { state in
            state.lastID = lastID
            state.visibleID = lastID
            state.gated = gated
        }
    }

    // MARK: - Writing

    /// Appends an event built for its id; returns the id.
    @discardableResult
    public func append(_ name: String, _ data: [UInt8]) -> Int {
        state.withLock { state in
            state.lastID += 1
            let event = Event(id: state.lastID, name: name, data: data)
            if state.buffer.count < state.capacity {
                state.buffer.append(event)
            } else {
                state.buffer[state.start] = event
                state.start = (state.start + 1) % state.capacity
            }
            if !state.gated { state.visibleID = state.lastID }
            return state.lastID
        }
    }

    /// Lets streams send every event up to `id` (its change is durable). Wake the log afterwards.
    public func publish(through id: Int) {
        state.withLock { $0.visibleID = max($0.visibleID, min(id, $0.lastID)) }
    }

    /// Continues the ids of an earlier run: the next event gets `id + 1` (an empty log only).
    func continueAfter(_ id: Int) {
        state.withLock { state in
            guard state.buffer.isEmpty else { return }
            state.lastID = id
            state.visibleID = id
            state.highestSent = id
        }
    }

    /// Marks the log closed: streams end once they have sent what it holds. Wake it afterwards.
    public func close() {
        state.withLock { $0.closed = true }
    }

    /// Closed, with every event visible (a closed log's last events may still wait for durability).
    public var isClosed: Bool { state.withLock { $0.closed && $0.visibleID == $0.lastID } }

    public var capacity: Int { state.withLock { $0.capacity } }

    /// Runs every attached stream's waker (call after releasing the store's lock).
    public func wake() {
        let wakers = state.withLock { $0.wakers.isEmpty ? [] : Array($0.wakers.values) }
        for wake in wakers { wake() }
    }

    // MARK: - Reading

    /// Up to `limit` events after `cursor` (the last id the reader has).
    public func read(after cursor: Int, limit: Int = 256) -> ReadResult {
        state.withLock { state in
            guard cursor < state.visibleID else { return .upToDate }
            guard !state.buffer.isEmpty, cursor + 1 >= state.oldestID else {
                return .gap(oldest: max(1, state.oldestID))
            }
            let last = min(state.visibleID, cursor + limit)
            state.highestSent = max(state.highestSent, last)
            return .events((cursor + 1...last).map { state.event(withID: $0) })
        }
    }

    /// Attaches a stream: `wake` runs whenever events are appended. Returns its token.
    public func attach(cursor: Int, wake: @escaping @Sendable () -> Void) -> Int {
        state.withLock { state in
            let token = state.nextStreamToken
            state.nextStreamToken += 1
            state.wakers[token] = wake
            state.cursors[token] = cursor
            return token
        }
    }

    /// Records how far a stream has sent.
    public func advance(_ token: Int, to cursor: Int) {
        state.withLock { $0.cursors[token] = cursor }
    }

    /// Detaches a stream; `dropped` counts it as cut off for being slow.
    public func detach(_ token: Int, dropped: Bool = false) {
        state.withLock { state in
            state.wakers[token] = nil
            state.cursors[token] = nil
            if dropped { state.droppedStreams += 1 }
        }
    }

    // MARK: - Figures

    public var lastID: Int { state.withLock { $0.lastID } }

    /// The oldest id still held (lastID + 1 when empty).
    public var oldestID: Int { state.withLock { $0.buffer.isEmpty ? $0.lastID + 1 : $0.oldestID } }

    /// Events buffered but not yet sent to the slowest stream (to any stream, while none is attached).
    public var backlog: Int {
        state.withLock { state in
            let slowest = state.cursors.values.min() ?? state.highestSent
            return min(state.buffer.count, max(0, state.lastID - slowest))
        }
    }

    public var droppedStreams: Int { state.withLock { $0.droppedStreams } }
}
