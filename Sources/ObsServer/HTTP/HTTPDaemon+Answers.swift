private import CMicroHTTPD
import Glibc

// Complete answers as they are queued, and what they leave unsent on their sockets: part of
// HTTPDaemon, which alone sees libmicrohttpd.

extension HTTPDaemon {
    /// Tells the middleware of an answer as it is sent, and logs it (at debug level: one line
    /// per request, with its id).
    func report(_ pending: PendingRequest, status: Int) {
        chain.answered(status, pending)
        guard logsAnswers else { return }
        options.logger.debug(
            "\(pending.method) \(pending.path) \(status)", metadata: pending.logMetadata(status: status))
    }

    /// Queues a complete answer, with the headers the middleware gave the request and its id;
    /// whether it was queued.
    func queue(_ answer: HTTPResponse, _ pending: PendingRequest, _ connection: OpaquePointer) -> Bool {
        report(pending, status: answer.status)
        let created = answer.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let created else { return false }
        defer { MHD_destroy_response(created) }
        let headerBytes = Self.addHeaders(of: answer, pending, to: created)
        let queued = MHD_queue_response(connection, UInt32(answer.status), created)
        if let state = cmhd_connection_state_of(connection) {
            let written = Int64(answer.body.count + headerBytes + AnswerFirst.daemonHeadBytes)
            let (sum, overflow) = state.pointee.unsent_bound.addingReportingOverflow(written)
            state.pointee.unsent_bound = overflow ? .max : sum
        }
        return queued == .YES
    }

    /// Whether `reply` is an answer that libmicrohttpd writes whole in this turn of its loop
    /// (`AnswerFirst`): a small one, on a socket with little queued unsent. That is known from
    /// the connection's bound (what was written since the last count) while it is low; only
    /// past it are the bytes counted (a system call), and the bound set to the count.
    func goesAtOnce(_ reply: Reply, _ connection: OpaquePointer) -> Bool {
        guard case .now(let answer) = reply, answer.body.count <= AnswerFirst.maxDeferringAnswerBytes,
            let state = cmhd_connection_state_of(connection)
        else { return false }
        return AnswerFirst.hasLittleUnsent(bound: &state.pointee.unsent_bound) {
            let counted = cmhd_connection_unsent_bytes(connection)
            return counted >= 0 ? Int64(counted) : nil
        }
    }

    /// Notes that a connection's socket gets bytes the daemon does not count (a stream's): its
    /// next deferral counts what is queued.
    static func uncountedWrites(on connection: OpaquePointer) {
        cmhd_connection_state_of(connection)?.pointee.unsent_bound = .max
    }

    /// Adds an answer's `Content-Type` (when it has one) and headers, then those the middleware
    /// gave its request (CORS) and `X-Request-Id`; returns the bytes they take in the answer.
    @discardableResult
    static func addHeaders(of answer: HTTPResponse, _ pending: PendingRequest, to response: OpaquePointer) -> Int {
        var bytes = 0
        if !answer.contentType.isEmpty {
            bytes += add("Content-Type", answer.contentType, to: response)
        }
        for (name, value) in answer.headers { bytes += name.withCString { add($0, value, to: response) } }
        for (name, value) in pending.answerHeaders { bytes += name.withCString { add($0, value, to: response) } }
        return bytes + add("X-Request-Id", pending.requestID, to: response)
    }

    /// Adds one header; returns its bytes in the answer (`name: value` and CRLF). `withCString`:
    /// passing the string itself would copy it into a new array on every call.
    private static func add(_ name: UnsafePointer<CChar>, _ value: String, to response: OpaquePointer) -> Int {
        value.withCString { value in
            _ = MHD_add_response_header(response, name, value)
            return strlen(name) + strlen(value) + 4
        }
    }

    /// Adds a header whose name is a C string in the binary (a Swift string this short would be
    /// copied into a new buffer for every call); lengths as Swift knows them, not counted again.
    private static func add(_ name: StaticString, _ value: String, to response: OpaquePointer) -> Int {
        value.withCString { cValue in
            _ = MHD_add_response_header(
                response, UnsafeRawPointer(name.utf8Start).assumingMemoryBound(to: CChar.self), cValue)
            return name.utf8CodeUnitCount + value.utf8.count + 4
        }
    }
}
