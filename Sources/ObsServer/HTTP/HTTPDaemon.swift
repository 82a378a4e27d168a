private import CMicroHTTPD
import Foundation
import Logging
import ObservationCore

/// Settings for the HTTP daemon.
struct HTTPDaemonOptions: Sendable {
    var host: String
    var port: UInt16
    /// Worker threads (epoll, each with its own event loop); defaults to the CPUs in the affinity mask.
    var threads = Int(cmhd_usable_cpus())
    var connectionLimit = 19_000
    /// Per-connection buffer memory in libmicrohttpd (small keeps idle streams cheap).
    var connectionMemoryLimit = 8 * 1024
    /// Seconds without progress before a connection is closed: an idle keep-alive connection, a
    /// client that sends its headers too slowly. Parked connections (event streams, answers
    /// waiting to be durable) never time out.
    var connectionTimeout = 60
    /// Most simultaneous connections from one client address (0: no limit).
    var connectionsPerAddress = 0
    /// How long TCP keeps trying a silent stream client before the socket fails (`SocketWatcher`).
    var peerTimeout: Duration = .seconds(30)
    var maxBodyBytes: Int
    /// What answers carrying `holdUntil` wait for (none: they go at once).
    var gate: (any ResponseGate)?
    /// Told of every answer: its route, status and seconds since the request began.
    var onAnswer: (@Sendable (_ route: RouteLabel, _ status: Int, _ seconds: Double) -> Void)?
    /// Where libmicrohttpd's own messages go (at debug level).
    var logger = Logger(label: "obs-server.http")
    /// Cross-origin access (nil: no CORS header on any answer).
    var cors: CORSPolicy?
}

/// The libmicrohttpd daemon, and the only Swift type that sees it.
///
/// Runs libmicrohttpd with epoll on an internal thread pool, with
/// suspend/resume enabled (event streams suspend while they have nothing to
/// send). Requests are collected (headers, query, body up to the limit) and
/// handed to `handler` as a plain `HTTPRequest` on the worker thread; its
/// answer is queued on the same call.
///
/// Thread-safety: `handler` runs concurrently on all worker threads. The
/// daemon pointer is set by `start()` and cleared by `stop()`, both under `daemon`'s lock.
/// Lifetime: the daemon must be stopped before this object is released
/// (callbacks hold it unretained).
final class HTTPDaemon: Sendable {
    typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    private let options: HTTPDaemonOptions
    private let handler: Handler
    private let daemon = Locked<DaemonHandle?>(nil)
    /// Open event streams, so `stop()` can end them and wait for them (libmicrohttpd aborts
    /// when stopped with suspended connections).
    private let streams = Locked(OpenStreams())
    /// Requests whose answer waited at the gate or was deferred, until libmicrohttpd reports
    /// them complete (answer sent, or connection gone): `stop()` waits for them, so an answer
    /// queued just before the stop is sent, not cut off by it.
    private let held = Locked(0)
    /// Deferred answers whose connections are parked (`stop()` gives up on those left).
    private let parked = Locked<[ObjectIdentifier: DeferredAnswer]>([:])
    /// Notices stream clients that hang up.
    private let watcher: SocketWatcher
    /// Tells a parked stream when its socket has room for the rest of a direct write.
    private let writable: SocketWatcher

    init(options: HTTPDaemonOptions, handler: @escaping Handler) throws {
        self.options = options
        self.handler = handler
        watcher = try SocketWatcher(.hangup, peerTimeout: options.peerTimeout, logger: options.logger)
        writable = try SocketWatcher(.writable, peerTimeout: options.peerTimeout, logger: options.logger)
    }

    deinit {
        assert(daemon.withLock { $0 == nil }, "HTTPDaemon released while running: call stop() first")
    }

    /// Binds and starts serving; returns the port (useful with port 0).
    func start() throws -> UInt16 {
        try daemon.withLock { handle in
            precondition(handle == nil, "HTTPDaemon started twice")
            let context = Unmanaged.passUnretained(self).toOpaque()
            var errorText: UnsafePointer<CChar>?
            let started: OpaquePointer? = options.host.withCString { host in
                var config = cmhd_daemon_config(
                    flags: MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
                        | MHD_USE_TURBO.rawValue
                        | MHD_USE_ERROR_LOG.rawValue,
                    host: host, port: options.port,
                    thread_pool_size: options.threads > 1 ? UInt32(options.threads) : 0,  // 1 means no pool
                    connection_limit: UInt32(options.connectionLimit),
                    connection_memory_limit: UInt32(options.connectionMemoryLimit),
                    connection_timeout: UInt32(options.connectionTimeout),
                    per_ip_connection_limit: UInt32(options.connectionsPerAddress), listen_backlog: 4096,
                    handler: Self.accessHandler, handler_context: context,
                    completed: Self.completedHandler, completed_context: context,
                    log_sink: Self.logSink, log_context: context)
                return cmhd_start_daemon(&config, &errorText)
            }
            guard let started else {
                let reason = errorText.map { String(cString: $0) } ?? "unknown error"
                throw HTTPDaemonError(message: "cannot listen on \(options.host):\(options.port): \(reason)")
            }
            handle = DaemonHandle(pointer: started)
            // Accepted sockets inherit the listening socket's keep-alive and TCP_USER_TIMEOUT
            // (Linux): set once here, not with five calls per stream.
            let listening = cmhd_listen_socket(started)
            if listening >= 0 { watcher.configure(socket: listening) }
            watcher.start()
            writable.start()
            return cmhd_bound_port(started)
        }
    }

    /// Ends every event stream (and any that opens from now on), waits for them and for
    /// answers held at the gate (at most `grace`), then closes every connection. Idempotent.
    /// Answers still held after `grace` (their commits keep failing) are abandoned: their
    /// connections close unanswered (libmicrohttpd aborts if stopped with suspended ones).
    ///
    /// `MHD_quiesce_daemon` is not used: in 0.9.75 it races with epoll workers removing the
    /// listen socket themselves ("Failed to remove listen FD from epoll set", a panic, seen
    /// under ThreadSanitizer). Connections accepted meanwhile are served or closed by the stop.
    func stop(grace: Duration = .seconds(5)) {
        guard let handle = daemon.withLock({ $0.take() }) else { return }
        let open = streams.withLock { streams in
            streams.stopping = true
            return Array(streams.open.values)
        }
        for stream in open { stream.stop() }
        let streamsOpen = { !self.streams.withLock { $0.open.isEmpty } }
        let answersHeld = { self.held.withLock { $0 > 0 } }
        Self.wait(for: grace) { streamsOpen() || answersHeld() }
        // A stream whose client stopped reading may still wait, parked, for room to write:
        // libmicrohttpd must not be stopped with parked connections.
        for stream in streams.withLock({ Array($0.open.values) }) { stream.abort() }
        Self.wait(for: .seconds(2), while: streamsOpen)
        if answersHeld() {
            options.gate?.abandon()
            for answer in parked.withLock({ Array($0.values) }) { answer.resolve { nil } }
            Self.wait(for: .seconds(2), while: answersHeld)
        }
        MHD_stop_daemon(handle.pointer)
        watcher.stop()
        writable.stop()
    }

    /// Waits (at most `limit`) while `condition` holds. Shutdown only: what it waits for ends
    /// within milliseconds.
    private static func wait(for limit: Duration, while condition: () -> Bool) {
        let deadline = ContinuousClock.now + limit
        while condition(), ContinuousClock.now < deadline { usleep(2_000) }
    }

    // MARK: - Callbacks (C → Swift)

    /// Called by libmicrohttpd for the headers, for each body chunk, and once more to answer.
    private static let accessHandler: MHD_AccessHandlerCallback = {
        context, connection, url, method, version, uploadData, uploadDataSize, requestContext in
        guard let context, let connection, let url, let method, let uploadDataSize, let requestContext else {
            return .NO
        }
        let daemon = Unmanaged<HTTPDaemon>.fromOpaque(context).takeUnretainedValue()
        guard let pointer = requestContext.pointee else {
            let pending = PendingRequest(
                method: String(cString: method), path: String(cString: url), framing: streamFraming(version))
            requestContext.pointee = Unmanaged.passRetained(pending).toOpaque()
            return daemon.begin(pending, connection)
        }
        let pending = Unmanaged<PendingRequest>.fromOpaque(pointer).takeUnretainedValue()
        let size = uploadDataSize.pointee
        if size > 0 {
            if let uploadData, pending.rejection == nil {
                if pending.body.count + size > daemon.options.maxBodyBytes {
                    pending.rejection = APIError.payloadTooLarge(limit: daemon.options.maxBodyBytes)
                    pending.body = []
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                        pending.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: size))
                    }
                }
            }
            uploadDataSize.pointee = 0
            return .YES
        }
        return daemon.finish(pending, connection)
    }

    /// libmicrohttpd's own messages, mostly clients that went away mid-stream: debug level.
    private static let logSink: @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>) -> Void = {
        context, message in
        guard let context else { return }
        let daemon = Unmanaged<HTTPDaemon>.fromOpaque(context).takeUnretainedValue()
        daemon.options.logger.debug("libmicrohttpd: \(String(cString: message))")
    }

    /// Called when a request ends (answered, or the connection died, before its socket is
    /// closed): releases its state.
    private static let completedHandler: MHD_RequestCompletedCallback = { context, _, requestContext, _ in
        guard let requestContext, let pointer = requestContext.pointee else { return }
        let pending = Unmanaged<PendingRequest>.fromOpaque(pointer).takeRetainedValue()
        if let context {
            let daemon = Unmanaged<HTTPDaemon>.fromOpaque(context).takeUnretainedValue()
            daemon.unwatch(pending)
            if pending.countedHeld { daemon.held.withLock { $0 -= 1 } }
        }
        requestContext.pointee = nil
    }

    /// First call: read the headers and the query; refuse an announced body over the limit at once.
    private func begin(_ pending: PendingRequest, _ connection: OpaquePointer) -> MHD_Result {
        var fields = RequestFields()
        withUnsafeMutablePointer(to: &fields) { _ = cmhd_request_fields(connection, Self.fieldIterator, $0) }
        pending.requestID = RequestID.accepting(fields.headers.requestID)
        fields.headers.requestID = pending.requestID
        swap(&pending.headers, &fields.headers)  // moved, not copied
        swap(&pending.query, &fields.query)
        if let length = fields.contentLength.flatMap(Int.init), length > options.maxBodyBytes {
            // Answering before the body is read makes libmicrohttpd close the connection afterwards: intended here.
            let answer = APIError.payloadTooLarge(limit: options.maxBodyBytes).response
            return queue(answer, connection, requestID: pending.requestID)
        }
        return .YES
    }

    /// Last call: the whole request is in; answer it (or hold the answer at the gate). Called
    /// once more after a held connection is resumed: the held answer goes then.
    private func finish(_ pending: PendingRequest, _ connection: OpaquePointer) -> MHD_Result {
        if let deferred = pending.deferred {
            pending.deferred = nil
            parked.withLock { $0[ObjectIdentifier(deferred)] = nil }
            unwatch(pending)
            return deliver(deferred.take()?(), pending, connection)
        }
        if let answer = pending.held {
            pending.held = nil
            switch pending.verdict {
            case .abandoned: return .NO  // closed unanswered: durability unknown
            case .refused(let error): return answered(pending, error.response, connection)
            case .passed, .parked: return answered(pending, answer, connection)
            }
        }
        if let rejection = pending.rejection { return answered(pending, rejection.response, connection) }
        // Moved into the request, not copied: nothing reads them here again, and a stream's
        // pending request (it lives as long as the stream) keeps none of it: idle streams stay small.
        var (query, headers, body) = ([String: String](), HTTPHeaders(), [UInt8]())
        swap(&query, &pending.query)
        swap(&headers, &pending.headers)
        swap(&body, &pending.body)
        let request = HTTPRequest(
            method: HTTPMethod(rawValue: pending.method), path: pending.path, rawQuery: consume query,
            headers: consume headers, body: consume body)
        let answer = handler(request)
        if let deferred = answer.deferred {
            pending.route = answer.route
            return awaitAnswer(deferred, pending, connection)
        }
        if let ticket = answer.holdUntil, let gate = options.gate {
            pending.held = answer
            pending.connection = ConnectionHandle(pointer: connection)
            let decision = gate.hold(pending, until: ticket) {
                countHeld(pending)
                MHD_suspend_connection(connection)
            }
            switch decision {
            case .parked: return .YES
            case .abandoned: return .NO
            case .refused(let error):
                pending.held = nil
                return answered(pending, error.response, connection)
            case .passed: pending.held = nil
            }
        }
        return answered(pending, answer, connection)
    }

    /// Parks the connection until a deferred answer is known (or answers at once if it is).
    /// A parked answer that asks for it (`DeferredAnswer.onHangup`) has its socket watched: a
    /// client that hangs up meanwhile is heard at once.
    private func awaitAnswer(_ deferred: DeferredAnswer, _ pending: PendingRequest, _ connection: OpaquePointer)
        -> MHD_Result
    {
        let handle = ConnectionHandle(pointer: connection)
        pending.deferred = deferred
        let ready = deferred.hold {
            countHeld(pending)
            parked.withLock { $0[ObjectIdentifier(deferred)] = deferred }
            MHD_suspend_connection(connection)
        } release: {
            MHD_resume_connection(handle.pointer)
        }
        guard let ready else {
            // Parked: libmicrohttpd serves this connection again only after we return, so the
            // watch is in `pending` before the resumed call looks for it.
            let socket = cmhd_connection_socket(connection)
            if let onHangup = deferred.hangupHandler, socket >= 0,
                let token = watcher.watch(socket, handler: onHangup)
            {
                pending.watch = (socket, token)
            }
            return .YES
        }
        pending.deferred = nil
        return deliver(ready(), pending, connection)
    }

    /// Sends what a deferred answer's producer made (nil: close unanswered). The answer may be
    /// deferred in turn: a cluster read (deferred until the node caught up) that is a poll
    /// waiting for its first event.
    private func deliver(_ produced: HTTPResponse?, _ pending: PendingRequest, _ connection: OpaquePointer)
        -> MHD_Result
    {
        guard var answer = produced else { return .NO }
        if answer.route != .unrouted { pending.route = answer.route }
        answer.route = pending.route
        if let next = answer.deferred { return awaitAnswer(next, pending, connection) }
        return answered(pending, answer, connection)
    }

    /// Counts a request as held (once, however often its answer is deferred again) until
    /// libmicrohttpd reports it complete.
    private func countHeld(_ pending: PendingRequest) {
        guard !pending.countedHeld else { return }
        pending.countedHeld = true
        held.withLock { $0 += 1 }
    }

    /// Stops watching a parked answer's socket for hang-up (before libmicrohttpd may close it).
    private func unwatch(_ pending: PendingRequest) {
        guard let (socket, token) = pending.watch else { return }
        pending.watch = nil
        watcher.unwatch(socket, token: token)
    }

    /// Queues a request's answer, reports its latency, and logs it (at debug level: one line per
    /// request, with its id).
    private func answered(_ pending: PendingRequest, _ answer: HTTPResponse, _ connection: OpaquePointer)
        -> MHD_Result
    {
        if let onAnswer = options.onAnswer {
            onAnswer(answer.route, answer.status, BootClock.seconds(since: pending.started))
        }
        options.logger.debug(
            "\(pending.method) \(pending.path) \(answer.status)", metadata: pending.logMetadata(answer))
        return queue(answer, connection, requestID: pending.requestID, framing: pending.framing)
    }

    /// How libmicrohttpd frames a stream for a request of `version`: chunks for HTTP/1.1, raw
    /// bytes for HTTP/1.0 (any other version: bytes go through libmicrohttpd only).
    private static func streamFraming(_ version: UnsafePointer<CChar>?) -> StreamConnection.Framing {
        guard let version else { return .daemonOnly }
        if strcmp(version, "HTTP/1.1") == 0 { return .chunked }
        if strcmp(version, "HTTP/1.0") == 0 { return .raw }
        return .daemonOnly
    }

    /// Queues any answer: every one passes here, so every one gets the CORS headers and the
    /// request's id.
    private func queue(
        _ response: HTTPResponse, _ connection: OpaquePointer, requestID: String,
        framing: StreamConnection.Framing = .daemonOnly
    ) -> MHD_Result {
        // Looked up here: a stream's request headers are dropped before it is queued. Added
        // after the answer's own, without copying the answer.
        let corsHeaders = options.cors?.answerHeaders(origin: header(connection, "Origin")) ?? []
        if let body = response.stream {
            return queueStream(body, response, corsHeaders, requestID, connection, framing: framing)
        }
        let created = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return .NO }
        defer { MHD_destroy_response(created) }
        Self.addHeaders(of: response, corsHeaders, requestID, to: created)
        return MHD_queue_response(connection, UInt32(response.status), created)
    }

    /// Adds an answer's `Content-Type` (when it has one) and headers, then the CORS ones and
    /// `X-Request-Id`.
    private static func addHeaders(
        of answer: HTTPResponse, _ corsHeaders: [(name: String, value: String)], _ requestID: String,
        to response: OpaquePointer
    ) {
        if !answer.contentType.isEmpty {
            answer.contentType.withCString { _ = MHD_add_response_header(response, contentType, $0) }
        }
        for (name, value) in answer.headers { add(name, value, to: response) }
        for (name, value) in corsHeaders { add(name, value, to: response) }
        add("X-Request-Id", requestID, to: response)
    }

    /// Adds one header. `withCString`: passing the strings themselves would copy each into a
    /// new array on every call (Swift has no C string for a short one).
    private static func add(_ name: String, _ value: String, to response: OpaquePointer) {
        name.withCString { name in
            value.withCString { value in _ = MHD_add_response_header(response, name, value) }
        }
    }

    // MARK: - Event streams

    private func queueStream(
        _ body: any StreamBody, _ response: HTTPResponse, _ corsHeaders: [(name: String, value: String)],
        _ requestID: String, _ connection: OpaquePointer, framing: StreamConnection.Framing
    ) -> MHD_Result {
        let handle = ConnectionHandle(pointer: connection)
        let socket = cmhd_connection_socket(connection)
        let stream = StreamConnection(
            body: body, socket: socket, framing: framing, writable: writable,
            suspend: { MHD_suspend_connection(handle.pointer) }, resume: { MHD_resume_connection(handle.pointer) })
        var watch: UInt64?
        if socket >= 0 { watch = watcher.watch(socket) { [weak stream] in stream?.abort() } }
        let context = Unmanaged.passRetained(StreamContext(stream: stream, daemon: self, watch: watch)).toOpaque()
        guard
            let created = cmhd_create_stream_response(
                framing == .chunked ? 1 : Self.streamBlockBytes, Self.streamReader, context, Self.streamFreed)
        else {
            Unmanaged<StreamContext>.fromOpaque(context).release()
            if let watch { watcher.unwatch(socket, token: watch) }
            stream.finish()  // the stream leaves the counts it entered when it was opened
            return .NO
        }
        defer { MHD_destroy_response(created) }
        let registered = streams.withLock { streams in
            guard !streams.stopping else { return false }
            streams.open[ObjectIdentifier(stream)] = stream
            return true
        }
        if !registered { stream.stop() }  // the daemon is stopping: it ends at its first read
        body.start(
            StreamControl(wake: { [weak stream] in stream?.wake() }, abort: { [weak stream] in stream?.abort() }))
        Self.addHeaders(of: response, corsHeaders, requestID, to: created)
        return MHD_queue_response(connection, UInt32(response.status), created)
    }

    /// `Content-Type` as a C string in the binary (a Swift string this short would be copied
    /// into a new buffer for every call).
    private static var contentType: UnsafePointer<CChar> {
        let name: StaticString = "Content-Type"
        return UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// The buffer libmicrohttpd allocates (zeroed) with each stream's response. Chunked (HTTP/1.1)
    /// streams never use it: they are read straight into the connection's own buffer, so theirs
    /// is 1 byte (libmicrohttpd refuses 0). Only a stream without chunks (HTTP/1.0) reads
    /// through it, in pieces of this size. Small keeps idle streams cheap.
    private static let streamBlockBytes = 256

    /// Called when the socket can take more of a stream.
    private static let streamReader: MHD_ContentReaderCallback = { context, _, buffer, max in
        guard let context, let buffer else { return -1 }
        let stream = Unmanaged<StreamContext>.fromOpaque(context).takeUnretainedValue().stream
        return stream.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: max))
    }

    /// Called once when a stream's connection ends, before libmicrohttpd closes its socket:
    /// stops watching the socket, releases the stream and tells its body.
    private static let streamFreed: MHD_ContentReaderFreeCallback = { context in
        guard let context else { return }
        let box = Unmanaged<StreamContext>.fromOpaque(context).takeRetainedValue()
        if let watch = box.watch { box.daemon.watcher.unwatch(box.stream.socket, token: watch) }
        box.daemon.streams.withLock { $0.open[ObjectIdentifier(box.stream)] = nil }
        box.stream.finish()
    }

    private func header(_ connection: OpaquePointer, _ name: String) -> String? {
        MHD_lookup_connection_value(connection, .HEADER_KIND, name).map { String(cString: $0) }
    }

    /// Collects a request's fields into a `RequestFields` (one thread, one call). The first of
    /// a repeated header counts; a repeated query argument keeps its last value. Query arguments
    /// come raw (see `cmhd_keep_escaped`); `HTTPRequest` decodes them.
    private static let fieldIterator: MHD_KeyValueIteratorN = { context, kind, key, keySize, value, valueSize in
        guard let context, let key else { return .YES }
        let fields = context.assumingMemoryBound(to: RequestFields.self)
        let name = UnsafeRawBufferPointer(start: key, count: keySize)
        let bytes = value.map { UnsafeRawBufferPointer(start: $0, count: valueSize) }
        if kind == .GET_ARGUMENT_KIND {
            fields.pointee.query[String(decoding: name, as: UTF8.self)] = bytes.map(RequestFields.text) ?? ""
        } else if let bytes {
            fields.pointee.setHeader(name, bytes)
        }
        return .YES
    }
}

/// What the daemon reads of a request's headers and query, gathered in one pass.
private struct RequestFields {
    var headers = HTTPHeaders()
    var contentLength: String?
    var query: [String: String] = [:]

    /// Keeps `value` if `name` (any case) is a header the service reads and it is its first
    /// (made a `String` only then: most headers are not read).
    mutating func setHeader(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        func first(_ field: inout String?) { if field == nil { field = Self.text(value) } }
        switch name.count {
        case 6 where ASCII.equalsLowercased(name, "accept"): first(&headers.accept)
        case 6 where ASCII.equalsLowercased(name, "origin"): first(&headers.origin)
        case 10 where ASCII.equalsLowercased(name, "obs-client"): first(&headers.client)
        case 12 where ASCII.equalsLowercased(name, "content-type"): first(&headers.contentType)
        case 12 where ASCII.equalsLowercased(name, "x-request-id"): first(&headers.requestID)
        case 13 where ASCII.equalsLowercased(name, "authorization"): first(&headers.authorization)
        case 13 where ASCII.equalsLowercased(name, "last-event-id"): first(&headers.lastEventID)
        case 14 where ASCII.equalsLowercased(name, "content-length"): first(&contentLength)
        case 15 where ASCII.equalsLowercased(name, "idempotency-key"): first(&headers.idempotencyKey)
        case 29 where ASCII.equalsLowercased(name, "access-control-request-method"): first(&headers.corsRequestMethod)
        default: break
        }
    }

    /// A value as a string; the one Content-Type nearly every write carries is a constant
    /// (a string that long would otherwise take an allocation per request).
    static func text(_ bytes: UnsafeRawBufferPointer) -> String {
        let json: StaticString = "application/json"
        if bytes.count == json.utf8CodeUnitCount, json.withUTF8Buffer({ $0.elementsEqual(bytes) }) {
            return "application/json"
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Why the daemon could not start.
struct HTTPDaemonError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// The daemon pointer, boxed so the `Mutex` can own it.
private struct DaemonHandle: @unchecked Sendable {
    // Unchecked: the pointer is only used to stop the daemon, once, by the thread that takes it out of the lock.
    let pointer: OpaquePointer
}

/// The open event streams, and whether the daemon is stopping (then no stream may park).
private struct OpenStreams {
    var open: [ObjectIdentifier: StreamConnection] = [:]
    var stopping = false
}

/// What a stream's reader and free callbacks need.
private final class StreamContext: Sendable {
    let stream: StreamConnection
    let daemon: HTTPDaemon
    /// The hang-up watcher's token for the stream's socket.
    let watch: UInt64?

    init(stream: StreamConnection, daemon: HTTPDaemon, watch: UInt64?) {
        self.stream = stream
        self.daemon = daemon
        self.watch = watch
    }
}

/// A connection pointer captured by a stream's suspend/resume functions, or kept by an
/// answer held at the gate (which resumes it).
private struct ConnectionHandle: @unchecked Sendable {
    // Unchecked: libmicrohttpd allows resuming from any thread; StreamConnection suspends in
    // its reader and resumes once per suspension, after it (its state), and the gate resumes a held answer's
    // connection once, under its lock, after the event loop suspended it: uses never overlap.
    let pointer: OpaquePointer
}

/// One request's state between libmicrohttpd's calls (headers, body chunks, answer).
///
/// Unchecked Sendable: libmicrohttpd calls back for one connection on one
/// thread at a time, so the fields are never touched concurrently. The one call from
/// elsewhere, the gate's `release`, comes while the connection is suspended
/// (libmicrohttpd calls nothing for it until the resume that call makes).
private final class PendingRequest: HeldAnswer, @unchecked Sendable {
    let method: String
    let path: String
    /// How a stream answer would be framed (from the request's HTTP version).
    let framing: StreamConnection.Framing
    // Unchecked exclusivity: libmicrohttpd hands a request to one callback at a time, and
    // these are changed in place on every request (the body appended, all three moved out):
    // the run-time check cost about 200 instructions a request.
    @exclusivity(unchecked) var headers = HTTPHeaders()
    /// Query arguments as libmicrohttpd hands them over (still percent-encoded).
    @exclusivity(unchecked) var query: [String: String] = [:]
    @exclusivity(unchecked) var body: [UInt8] = []
    var rejection: APIError?
    /// The answer, while it waits at the gate.
    var held: HTTPResponse?
    /// The gate's verdict on the held answer, once it is released.
    var verdict = GateVerdict.parked
    /// The connection, set when its answer is held at the gate (for the gate's resume).
    var connection: ConnectionHandle?
    /// Counted in the daemon's `held` (its answer waited), until it completes.
    var countedHeld = false
    /// The answer that comes later, while the connection is parked for it, and its route.
    var deferred: DeferredAnswer?
    var route = RouteLabel.unrouted
    /// `X-Request-Id`: the client's, or one made when the headers arrived.
    var requestID = ""
    /// The hang-up watcher's token for the socket, while a parked answer asks for it.
    var watch: (socket: Int32, token: UInt64)?
    let started = BootClock.nanoseconds

    init(method: String, path: String, framing: StreamConnection.Framing) {
        self.method = method
        self.path = path
        self.framing = framing
    }

    /// The gate's verdict on the held answer (on the gate's thread; the connection is
    /// suspended, so libmicrohttpd does not touch this request meanwhile).
    func release(_ verdict: GateVerdict) {
        self.verdict = verdict
        if let connection { MHD_resume_connection(connection.pointer) }
    }

    /// What the log line of an answered request says besides its message: the request's id,
    /// the answer's route and status, the milliseconds it took, and the observer its path names.
    func logMetadata(_ answer: HTTPResponse) -> Logger.Metadata {
        var metadata: Logger.Metadata = [
            "requestId": .string(requestID), "route": .string(answer.route.name), "status": "\(answer.status)",
            "ms": "\(Double(BootClock.nanoseconds - started) / 1e6)",
        ]
        let observers = "/v1/observers/"
        if path.hasPrefix(observers), let id = path.dropFirst(observers.count).split(separator: "/").first {
            metadata["observer"] = .string(PercentDecoding.decode(String(id)))
        }
        return metadata
    }
}
