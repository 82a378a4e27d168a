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
    /// client that sends its headers too slowly. Parked connections (event streams, deferred
    /// answers) are not timed here: a deferred answer's maker bounds it (see `Reply.later`).
    var connectionTimeout = 60
    /// Most simultaneous connections from one client address (0: no limit).
    var connectionsPerAddress = 0
    /// How long TCP keeps trying a silent stream client before the socket fails (`SocketWatcher`).
    var peerTimeout: Duration = .seconds(30)
    var maxBodyBytes: Int
    /// Where libmicrohttpd's own messages go (at debug level), and a line per answer.
    var logger = Logger(label: "obs-server.http")
}

/// The libmicrohttpd daemon, and the only Swift type that sees it.
///
/// Runs libmicrohttpd with epoll on an internal thread pool, with suspend/resume enabled.
/// Requests are collected (headers, query, body up to the limit) and handed to the middleware
/// chain as a plain `HTTPRequest` on the worker thread. Its `Reply` is sent in one of three
/// ways: `now` is queued on the same call; a `stream` parks whenever it has nothing to send;
/// `later` parks the connection (suspends it) until its `DeferredAnswer` is resolved, which
/// resumes it, and the answer is sent from the resumed call (the daemon sets no deadline:
/// whoever made the answer resolves it in bounded time, see `Reply.later`).
///
/// Thread-safety: the chain runs concurrently on all worker threads. The
/// daemon pointer is set by `start()` and cleared by `stop()`, both under `daemon`'s lock.
/// Lifetime: the daemon must be stopped before this object is released
/// (callbacks hold it unretained).
final class HTTPDaemon: Sendable {
    let options: HTTPDaemonOptions
    let chain: MiddlewareChain
    /// Whether answers are logged (the logger's level is fixed with it: checked once here).
    let logsAnswers: Bool
    private let daemon = Locked<DaemonHandle?>(nil)
    /// Open event streams, so `stop()` can end them and wait for them (libmicrohttpd aborts
    /// when stopped with suspended connections).
    let streams = Locked(OpenStreams())
    /// Requests whose answer was deferred, counted until libmicrohttpd reports them complete
    /// (answer sent, or connection gone): `stop()` waits for them, so an answer queued just
    /// before the stop is sent, not cut off by it.
    private let answersInFlight = Locked(0)
    /// Deferred answers whose connections are parked (`stop()` gives up on those left), and
    /// whether the daemon is stopping (then nothing parks any more).
    private let parked = Locked<(answers: [ObjectIdentifier: DeferredAnswer], stopping: Bool)>(([:], false))
    /// Notices stream clients that hang up.
    let watcher: SocketWatcher
    /// Tells a parked stream when its socket has room for the rest of a direct write.
    let writable: SocketWatcher

    init(options: HTTPDaemonOptions, chain: MiddlewareChain) throws {
        self.options = options
        self.chain = chain
        logsAnswers = options.logger.logLevel <= .debug
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
    /// deferred answers (at most `grace`), then closes every connection. Idempotent. Answers
    /// still deferred after `grace` (their commits keep failing) are given up: their
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
        let answersPending = { self.answersInFlight.withLock { $0 > 0 } }
        Self.wait(for: grace) { streamsOpen() || answersPending() }
        // A stream whose client stopped reading may still wait, parked, for room to write:
        // libmicrohttpd must not be stopped with parked connections.
        for stream in streams.withLock({ Array($0.open.values) }) { stream.abort() }
        Self.wait(for: .seconds(2), while: streamsOpen)
        // From now on nothing parks; what is parked is given up on (closed unanswered), and
        // whatever parked while it was looked at is given up on at the next look.
        parked.withLock { $0.stopping = true }
        let giveUp = {
            for answer in self.parked.withLock({ Array($0.answers.values) }) { answer.resolve(with: .close) }
        }
        giveUp()
        Self.wait(for: .seconds(2)) {
            giveUp()
            return answersPending()
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
        // Both borrowed, not retained: the daemon outlives its callbacks, and `requestContext`
        // holds the request until `completedHandler`, which never runs inside this call.
        return Unmanaged<HTTPDaemon>.fromOpaque(context)._withUnsafeGuaranteedRef { daemon in
            guard let pointer = requestContext.pointee else {
                let pending = PendingRequest(
                    method: HTTPMethod(cString: method), path: String(cString: url), framing: streamFraming(version))
                requestContext.pointee = Unmanaged.passRetained(pending).toOpaque()
                return daemon.begin(pending, connection)
            }
            return Unmanaged<PendingRequest>.fromOpaque(pointer)._withUnsafeGuaranteedRef { pending in
                let size = uploadDataSize.pointee
                guard size > 0 else { return daemon.finish(pending, connection) }
                if let uploadData, pending.rejection == nil { daemon.take(uploadData, size, into: pending) }
                uploadDataSize.pointee = 0
                return .YES
            }
        }
    }

    /// Keeps a body chunk (or refuses the body, once it is over the limit).
    private func take(_ chunk: UnsafeRawPointer, _ size: Int, into pending: PendingRequest) {
        guard pending.body.count + size <= options.maxBodyBytes else {
            pending.rejection = APIError.payloadTooLarge(limit: options.maxBodyBytes)
            pending.body = []
            return
        }
        chunk.withMemoryRebound(to: UInt8.self, capacity: size) {
            let chunk = UnsafeBufferPointer(start: $0, count: size)
            if pending.body.isEmpty {
                pending.body = Array(chunk)
            } else {
                pending.body.append(contentsOf: chunk)
            }
        }
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
        pending.makeDeferredDeliveries()  // its answer is written (or the connection is gone)
        // Borrowed, not retained: the daemon outlives its callbacks.
        if let context {
            Unmanaged<HTTPDaemon>.fromOpaque(context)._withUnsafeGuaranteedRef { $0.release(pending) }
        }
        requestContext.pointee = nil
    }

    /// What the daemon keeps of a request that completes: its socket's watch, its parked entry,
    /// its count in flight.
    private func release(_ pending: PendingRequest) {
        unwatch(pending)
        // A parked request that ends without being resumed (its connection closed) leaves no entry.
        if case .parked(let deferred) = pending.phase {
            parked.withLock { $0.answers[ObjectIdentifier(deferred)] = nil }
        }
        if pending.countedInFlight { answersInFlight.withLock { $0 -= 1 } }
    }

    /// First call: read the headers and the query; refuse an announced body over the limit at once.
    private func begin(_ pending: PendingRequest, _ connection: OpaquePointer) -> MHD_Result {
        withUnsafeMutablePointer(to: &pending.fields) { _ = cmhd_request_fields(connection, Self.fieldIterator, $0) }
        pending.requestID = RequestID.accepting(pending.fields.headers.requestID)
        pending.fields.headers.requestID = pending.requestID
        guard let length = pending.fields.contentLength, length > options.maxBodyBytes else { return .YES }
        // Answering before the body is read makes libmicrohttpd close the connection afterwards:
        // intended here. Through the middleware (CORS headers, figures), unless it would wait.
        let rejection = APIError.payloadTooLarge(limit: options.maxBodyBytes)
        pending.rejection = rejection
        guard case .now(let answer) = chain.respond(pending.takeRequest(), pending) else {
            return answered(pending, rejection.response, connection)
        }
        return answered(pending, answer, connection)
    }

    /// Last call: the whole request is in; answer it. Called once more when a parked
    /// connection is resumed: its deferred answer goes then.
    private func finish(_ pending: PendingRequest, _ connection: OpaquePointer) -> MHD_Result {
        if case .parked(let deferred) = pending.phase {
            pending.phase = .reading
            parked.withLock { $0.answers[ObjectIdentifier(deferred)] = nil }
            unwatch(pending)
            return send(deferred.take() ?? .close, pending, connection)
        }
        let reply = AnswerFirst.handling(pending) { chain.respond(pending.takeRequest(), pending) }
        // A small answer to a peer that reads goes before the fan-out: libmicrohttpd writes it in
        // this turn of its loop and completes the request (which makes the deferred deliveries). A
        // stream or a parked answer has nothing to go before; a large answer, or one to a peer
        // with bytes piling up unread, might not complete soon, and its deliveries would wait
        // with it (and, the logs waiting for one wake, everyone else's). Decided before the
        // answer is queued: what is unsent on the socket then is what it has to wait behind.
        let defers = pending.deferredDeliveries != nil && goesAtOnce(reply, connection)
        let result = send(reply, pending, connection)
        if !defers || result != .YES { pending.makeDeferredDeliveries() }
        return result
    }

    /// Sends a reply (`.close`: closes the connection unanswered).
    private func send(_ reply: Reply, _ pending: PendingRequest, _ connection: OpaquePointer) -> MHD_Result {
        switch reply {
        case .now(let answer): answered(pending, answer, connection)
        case .stream(let head, let body): queueStream(body, head, pending, connection) ? .YES : .NO
        case .later(let deferred): park(pending, connection, until: deferred)
        case .close: .NO
        }
    }

    /// Parks the connection until a deferred answer is known (or sends it at once if it is).
    /// A parked answer that asks for it (`DeferredAnswer.onHangup`) has its socket watched: a
    /// client that hangs up meanwhile is heard at once.
    private func park(_ pending: PendingRequest, _ connection: OpaquePointer, until deferred: DeferredAnswer)
        -> MHD_Result
    {
        pending.phase = .parked(deferred)
        pending.connection = ConnectionHandle(pointer: connection)
        // In flight from here, parked or not: an answer known already (a poll answered by a
        // stopping server before it parked) is still to be written when `stop` looks.
        countInFlight(pending)
        let ready = deferred.takeOrPark(
            suspend: {
                let parks = parked.withLock { parked in
                    guard !parked.stopping else { return false }
                    parked.answers[ObjectIdentifier(deferred)] = deferred
                    return true
                }
                guard parks else { return false }
                MHD_suspend_connection(connection)
                return true
            }, connection: pending)
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
        pending.phase = .reading
        return send(ready, pending, connection)
    }

    /// Counts a request's deferred answer as in flight (once, however often it is deferred
    /// again) until libmicrohttpd reports the request complete.
    private func countInFlight(_ pending: PendingRequest) {
        guard !pending.countedInFlight else { return }
        pending.countedInFlight = true
        answersInFlight.withLock { $0 += 1 }
    }

    /// Stops watching a parked answer's socket for hang-up (before libmicrohttpd may close it).
    private func unwatch(_ pending: PendingRequest) {
        guard let (socket, token) = pending.watch else { return }
        pending.watch = nil
        watcher.unwatch(socket, token: token)
    }

    private func answered(_ pending: PendingRequest, _ answer: HTTPResponse, _ connection: OpaquePointer)
        -> MHD_Result
    {
        queue(answer, pending, connection) ? .YES : .NO
    }

    /// How libmicrohttpd frames a stream for a request of `version`: chunks for HTTP/1.1, raw
    /// bytes for HTTP/1.0 (any other version: bytes go through libmicrohttpd only).
    private static func streamFraming(_ version: UnsafePointer<CChar>?) -> StreamConnection.Framing {
        guard let version else { return .daemonOnly }
        if strcmp(version, "HTTP/1.1") == 0 { return .chunked }
        if strcmp(version, "HTTP/1.0") == 0 { return .raw }
        return .daemonOnly
    }

    /// Collects a request's fields into its `RequestFields` (one thread, one call). The first of
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
