#if canImport(Glibc)
    import Glibc
#endif

/// Graceful shutdown on SIGINT/SIGTERM, without any work in a signal handler.
///
/// `blockTermination()` runs before any other thread exists, so every thread
/// (libmicrohttpd's included) inherits the blocked mask; then one thread
/// receives the signal synchronously with `waitForTermination()`.
enum Signals {
    static func blockTermination() {
        signal(SIGPIPE, SIG_IGN)
        var set = terminationSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Blocks until SIGINT or SIGTERM arrives; returns its name.
    static func waitForTermination() -> String {
        var set = terminationSet()
        var received: Int32 = 0
        while sigwait(&set, &received) != 0 {}
        return received == SIGINT ? "SIGINT" : "SIGTERM"
    }

    private static func terminationSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGTERM)
        return set
    }
}
