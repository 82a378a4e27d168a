private import CMicroHTTPD
import Glibc

extension HTTPDaemon {
    // MARK: - Event streams

    /// Queues a stream answer: its head now, then its body as the stream gives it; whether it was queued.
    func queueStream(
        _ body: any StreamBody, _ head: HTTPResponse, _ pending: PendingRequest, _ connection: OpaquePointer
    )
        -> Bool
    {
        report(pending, status: head.status)
        let framing = pending.framing
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
            return false
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
        Self.addHeaders(of: head, pending, to: created)
        Self.uncountedWrites(on: connection)
        return MHD_queue_response(connection, UInt32(head.status), created) == .YES
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
}

/// The open event streams, and whether the daemon is stopping (then no stream may park).
struct OpenStreams {
    var open: [ObjectIdentifier: StreamConnection] = [:]
    var stopping = false
}

/// What a stream's reader and free callbacks need.
final class StreamContext: Sendable {
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
