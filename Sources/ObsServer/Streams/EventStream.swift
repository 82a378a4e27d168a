import ObservationCore
import Synchronization

/// What a client asked of its stream (section 7.2), and what the server chose for it.
struct StreamOptions: Sendable {
    var framing = StreamFraming.sse
    /// `?commits=1`: a `commit` event after the last event of each revision.
    var commits = false
    /// `?progress=1`: `progress` events instead of keep-alive comments.
    var progress = false
    /// The `retry:` the stream starts with, in milliseconds (SSE only).
    var retryMilliseconds = 3_000
}

/// Where a stream reads the settled revision from (`Store`; a fixed one in tests).
protocol SettledRevisions: AnyObject, Sendable {
    /// The revision through which every log shows all its events.
    var settledRevision: Int { get }
}

extension Store: SettledRevisions {}

/// Where a new stream's replay ends: it sends `synced` once it has every event up to
/// `lastEventID`, which holds every event of revisions up to `revision`.
struct ReplayEnd: Sendable {
    let lastEventID: Int
    let revision: Int
}

/// One event stream over an event log (an observer's, or the admin log), as Server-Sent
/// Events or NDJSON.
///
/// Sends what the log holds after its cursor, in batches (many events per write, no
/// more than `batchBytes` of them taken at a time), then parks until the log has more.
/// The replay on connect (or the rebuild after `reset`) ends with `synced`; with
/// `commits`, each revision's last event is followed by `commit`; a delivery barrier
/// (`POST …/progress`) becomes `progress` once every event before it is sent. A heartbeat
/// (a comment, or `progress`) goes out when the hub asks for one. A reader whose next
/// event leaves the log's buffer (it fell more than the buffer behind) is cut off by the
/// log and counted as dropped; it resumes with Last-Event-ID.
///
/// Memory: the events a stream has taken but not sent are shared with the log (see
/// `StreamOutbox`); a rebuild after `reset` is produced a batch at a time as the client
/// reads it, never as a whole.
final class EventStream: StreamBody {
    private struct State {
        var cursor: Int
        var outbox: StreamOutbox
        var rebuild: RebuildSource?
        var heartbeatDue = false
        var token: Int?
        var wake: (@Sendable () -> Void)?
        var abort: (@Sendable () -> Void)?
        var finished = false
        /// `synced` is sent: live events from here on.
        var synced = false
        /// With `commits`: the revision of the last event sent, whose `commit` is still due.
        var openRevision: Int?
        /// Delivery barriers not yet passed: `progress` at `revision` after event `afterID`.
        var barriers: [(afterID: Int, revision: Int)] = []
        /// The highest revision the stream has told (`synced`, `commit`, `progress`): an idle
        /// `progress` never tells less, though a durable store's settled revision may trail it.
        var toldRevision = 0
        /// The token it was opened with ended: this `revoked` event is its last (section 13).
        var revoked: Event?
        var revokedSent = false
        /// The last log read handed every event the log showed (see `readDirectly`).
        var caughtUp = false
    }

    /// Barriers a stream keeps at most; past it, the latest replaces the last (it covers it).
    static let maxBarriers = 64

    /// The most event bytes a stream takes from its log (or its rebuild) at a time (at least one event).
    static let batchBytes = 64 * 1024

    let log: EventLog
    /// The scoped token it was opened with, if any: the stream ends when that token does.
    let credential: StreamCredential?
    private let state: Locked<State>
    /// Where the stream is counted (its counters too); it leaves at `finish`.
    private let hub: StreamHub
    /// Runs once at `finish`, after the stream left the hub (the store's closeStream).
    private let onClose: @Sendable () -> Void
    private let options: StreamOptions
    private let replayEnd: ReplayEnd
    /// The revision through which every log shows all its events (`Store.settledRevision`):
    /// a reference, not a closure (a closure's context is an allocation per stream).
    private let revisions: any SettledRevisions

    /// A stream that first sends `prelude` (a `reset`), then `rebuild`'s records, then the log
    /// after `cursor`, with `synced` once it has everything up to `replayEnd`.
    init(
        log: EventLog, cursor: Int, prelude: [Event], rebuild: RebuildSource?, replayEnd: ReplayEnd,
        options: StreamOptions, hub: StreamHub, revisions: any SettledRevisions, credential: StreamCredential? = nil,
        onClose: @escaping @Sendable () -> Void
    ) {
        self.log = log
        self.credential = credential
        self.hub = hub
        self.options = options
        self.replayEnd = replayEnd
        self.revisions = revisions
        self.onClose = onClose
        var initial = State(cursor: cursor, outbox: StreamOutbox(framing: options.framing), rebuild: rebuild)
        if options.framing == .sse {
            var retry = Array("retry: ".utf8)
            JSONWriter.appendDecimal(options.retryMilliseconds, to: &retry)
            retry.append(contentsOf: "\n\n".utf8)
            initial.outbox.append(text: retry)
        }
        for event in prelude { initial.outbox.append(event) }
        state = Locked(initial)
    }

    func start(_ control: StreamControl) {
        let cursor = state.withLock { state in
            state.wake = control.wake
            state.abort = control.abort
            return state.cursor
        }
        let reader = EventLog.Reader(
            wake: control.wake,
            abort: { [counters = hub.counters] in
                counters.dropped.add(1, ordering: .relaxed)
                control.abort()
            },
            // Strong: the log lets go of its readers when the stream detaches (`finish`) or is
            // cut off, and a weak reference would cost a side table per stream.
            barrier: { afterID, revision in self.addBarrier(after: afterID, revision: revision) })
        let token = log.attach(cursor: cursor, reader: reader)
        state.withLock { $0.token = token }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> StreamRead {
        state.withLock { read(into: buffer, &$0) }
    }

    func readDirectly(into buffer: UnsafeMutableRawBufferPointer) -> (read: StreamRead, drained: Bool) {
        state.withLock { state in
            let read = read(into: buffer, &state)
            // What a read now would find: nothing, unless the log, a barrier, a heartbeat or a
            // revocation wakes the stream (each does after changing what it finds).
            let drained =
                state.caughtUp && state.outbox.isEmpty && state.synced && state.rebuild == nil
                && state.revoked == nil && state.barriers.isEmpty && !state.heartbeatDue && state.openRevision == nil
            return (read, drained)
        }
    }

    private func read(into buffer: UnsafeMutableRawBufferPointer, _ state: inout State) -> StreamRead {
        if state.outbox.isEmpty, let end = refill(&state) { return end }
        var written = state.outbox.write(into: buffer)
        // Until `synced`, more while there is room: one chunk, one send for the opening
        // (`retry:`, the replay over several log batches, `synced`: it was a send each). Not
        // once live: a wake brings one batch, and looking again would be a second log read
        // per delivery (the next read finds the stream up to date anyway). What stops the
        // loop is told at the next read.
        while !state.synced, state.outbox.isEmpty, written < buffer.count, refill(&state) == nil {
            written += state.outbox.write(into: UnsafeMutableRawBufferPointer(rebasing: buffer[written...]))
        }
        return .bytes(written)
    }

    /// Takes the next batch into the outbox; returns how the stream goes on when there is none.
    private func refill(_ state: inout State) -> StreamRead? {
        state.caughtUp = false
        // Revoked: `revoked` goes out in place of whatever the log holds next, then the end.
        if state.revokedSent { return .end }
        if let revoked = state.revoked {
            state.outbox.append(revoked)
            state.revokedSent = true
            return nil
        }
        if var rebuild = state.rebuild {
            let records = rebuild.next(maxBytes: Self.batchBytes)
            state.rebuild = records.isEmpty ? nil : rebuild
            for record in records { state.outbox.append(record) }
            if !records.isEmpty { return nil }
        }
        if !state.synced, state.cursor >= replayEnd.lastEventID {
            state.synced = true
            closeRevision(&state)
            append(
                "synced",
                ["lastEventId": .int(max(state.cursor, replayEnd.lastEventID)), "revision": .int(replayEnd.revision)],
                to: &state)
            return nil
        }
        // Read before looking at the log: what it then shows holds every event up to it.
        let settled = options.progress && state.heartbeatDue ? revisions.settledRevision : 0
        let through = state.synced ? Int.max : replayEnd.lastEventID
        // Each event straight into the outbox (no array of them in between), encoded after the
        // log's lock is released.
        var handed = 0
        let outcome = log.read(after: state.cursor, through: through, maxBytes: Self.batchBytes, advancing: state.token)
        {
            event in
            if options.commits {
                if let open = state.openRevision, open != event.revision { closeRevision(&state) }
                state.openRevision = event.revision > 0 ? event.revision : nil
            }
            state.outbox.appendUnencoded(event)
            state.cursor = event.id
            handed += 1
        }
        state.outbox.encodeDeferred()
        switch outcome {
        case .events(let caughtUp):
            state.caughtUp = caughtUp
            hub.counters.events.add(handed, ordering: .relaxed)
            state.heartbeatDue = false
            passBarriers(&state)
            return nil
        case .gap:
            // Cut off here, or already by the log (which counted it) when its next event left.
            if let token = state.token, log.detach(token, dropped: true) {
                hub.counters.dropped.add(1, ordering: .relaxed)
            }
            state.token = nil
            return .end
        case .upToDate:
            // A log shows a revision's events all at once: the open revision is complete.
            closeRevision(&state)
            passBarriers(&state)
            if !state.outbox.isEmpty { return nil }
            if log.isClosed { return .end }
            guard state.heartbeatDue else { return .wait }
            state.heartbeatDue = false
            if options.progress {
                progress(settled, to: &state)
            } else {
                state.outbox.append(text: options.framing == .sse ? Self.heartbeat : Self.ndjsonHeartbeat)
            }
            return nil
        }
    }

    /// With `commits`: the `commit` of the revision whose events were sent last.
    private func closeRevision(_ state: inout State) {
        guard let open = state.openRevision else { return }
        state.openRevision = nil
        append("commit", ["revision": .int(open)], to: &state)
    }

    /// A `progress` for each barrier the stream has passed (every event before it sent), once
    /// it is live (`synced` first).
    private func passBarriers(_ state: inout State) {
        guard state.synced, !state.barriers.isEmpty else { return }
        let cursor = state.cursor
        var passed: [(afterID: Int, revision: Int)] = []
        state.barriers.removeAll { barrier in
            guard barrier.afterID <= cursor else { return false }
            passed.append(barrier)
            return true
        }
        // A barrier falls between revisions: one ending right at it is complete.
        if passed.contains(where: { $0.afterID == cursor }) { closeRevision(&state) }
        for barrier in passed { progress(barrier.revision, to: &state) }
    }

    /// A `progress` at `revision`, or at a higher one the stream told before (a durable
    /// store's settled revision may trail a barrier's or a commit's).
    private func progress(_ revision: Int, to state: inout State) {
        append("progress", ["revision": .int(max(revision, state.toldRevision))], to: &state)
    }

    /// An event the stream makes itself (`synced`, `commit`, `progress`): no id.
    private func append(_ name: String, _ members: JSONObject, to state: inout State) {
        if case .int(let revision) = members["revision"] { state.toldRevision = max(state.toldRevision, revision) }
        state.outbox.append(Event(id: 0, name: name, data: JSON.object(members).encoded()))
    }

    /// A delivery barrier at `revision`, passed once every event up to `afterID` is sent
    /// (the log wakes the stream next).
    private func addBarrier(after afterID: Int, revision: Int) {
        state.withLock { state in
            if state.barriers.count >= Self.maxBarriers {
                state.barriers[state.barriers.count - 1] = (afterID, revision)
            } else {
                state.barriers.append((afterID, revision))
            }
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
        hub.remove(self)
        onClose()
    }

    /// Closes the connection now.
    func abort() {
        state.withLock { $0.abort }?()
    }

    /// Ends the stream with `event` (`revoked`), sent once what it has taken is sent.
    func revoke(_ event: Event) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.revoked == nil, !state.finished else { return nil }
            state.revoked = event
            return state.wake
        }
        wake?()
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
    private static let ndjsonHeartbeat = Array("{\"event\":\"keep-alive\"}\n".utf8)
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
