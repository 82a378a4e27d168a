#if OBS_TSAN
    public import Foundation  // `NSLock` in the inlinable init
#else
    public import Synchronization
#endif

/// A value that is only ever reached under its lock.
///
/// Production builds use `Synchronization.Mutex`. ThreadSanitizer cannot see
/// `Mutex`'s futex on Linux (a two-thread `Mutex<[Int]>` append loop is
/// reported as a race), so builds made for it (`OBS_TSAN=1`, see the
/// Makefile's `test-tsan`) use a pthread-backed `NSLock` instead: the sanitizer
/// then checks every access to the state against a lock it understands.
///
/// Never call out, block or do I/O inside `withLock`: collect what must be
/// done and do it after the lock is released.
public final class Locked<State: Sendable>: Sendable {
    #if OBS_TSAN
        @usableFromInline let lock = NSLock()
        @usableFromInline nonisolated(unsafe) var state: State  // guarded by `lock`
    #else
        // Inlinable from other modules, so that their `withLock` calls are specialized for their
        // state: unspecialized, every call looked up `Mutex<State>`'s metadata (BENCHMARKS.md, "Figures behind the code").
        @usableFromInline let mutex: Mutex<State>
    #endif

    // Inlinable, so that a `Locked` made in another module is made there for its state:
    // unspecialized, every `Mutex(state)` looked up `Mutex<State>`'s metadata in the runtime's
    // cache (a durable PUT makes several: BENCHMARKS.md, "Figures behind the code").
    @inlinable
    public init(_ state: State) {
        #if OBS_TSAN
            self.state = state
        #else
            mutex = Mutex(state)
        #endif
    }

    #if OBS_TSAN
        /// Runs `body` with exclusive access to the state.
        public func withLock<Result, Failure: Error>(
            _ body: (inout State) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            lock.lock()
            defer { lock.unlock() }
            return try body(&state)
        }
    #else
        /// Runs `body` with exclusive access to the state.
        @inlinable
        public func withLock<Result, Failure: Error>(
            _ body: (inout State) throws(Failure) -> Result
        ) throws(Failure) -> Result {
            try mutex.withLock { (state: inout State) throws(Failure) -> sending Result in
                try body(&state)
            }
        }
    #endif
}
