private import CMicroHTTPD

// The daemon's side of a parked connection: part of HTTPDaemon, which alone sees libmicrohttpd.

/// A connection pointer captured by a stream's suspend/resume functions, or by a deferred
/// answer's release (which resumes it).
struct ConnectionHandle: @unchecked Sendable {
    // Unchecked: libmicrohttpd allows resuming from any thread; StreamConnection suspends in
    // its reader and resumes once per suspension, after it (its state), and a deferred answer
    // resumes its connection once, after the event loop suspended it under the answer's lock:
    // uses never overlap.
    let pointer: OpaquePointer
}

extension PendingRequest: ParkedConnection {
    /// Resumes the parked connection (once, from whoever resolved its answer): libmicrohttpd
    /// calls the request's handler again, which sends the answer.
    func resume() {
        if let connection { MHD_resume_connection(connection.pointer) }
    }
}
