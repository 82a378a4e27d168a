private import CCurl
import Foundation
import ObservationCore

/// An outbound `POST` (a webhook delivery).
struct OutboundRequest: Sendable {
    var url: String
    /// Extra header lines (`Content-Type: application/json` is always sent).
    var headers: [(name: String, value: String)] = []
    var body: [UInt8]
    /// The whole exchange, connection included.
    var timeout: Duration
    /// Whether a connection to this numeric address and port may be made: asked before each one.
    var permits: @Sendable (_ host: String, _ port: Int) -> Bool = { _, _ in true }
}

/// How an outbound request ended.
enum OutboundResult: Sendable, Equatable {
    /// An answer came, with this status (redirects are answers: never followed).
    case status(Int)
    /// No answer: a timeout, a refused or closed connection, an address `permits` refused.
    case failed(String)
}

/// libcurl's multi interface, and the only Swift type that sees libcurl.
///
/// One thread of its own drives every transfer: it adds what `send` queued, lets libcurl work,
/// reports what finished, asks its `turn` hook (run on this thread) for the longest it may wait,
/// and then sleeps in `curl_multi_poll` until a socket is ready, a timer is due or `wake()` (any
/// thread: `curl_multi_wakeup`) is called. Idle, it costs no CPU. https checks certificates
/// against the system's CA store (libcurl's default); redirects are not followed; connections
/// are kept and reused per host (libcurl's cache).
///
/// Thread-safety: `send`, `wake`, `start` and `stop` from any thread; completions and `turn`
/// run on the client's thread, with no lock held.
final class HTTPClient: Sendable {
    private struct Queue: Sendable {
        var submitted: [(OutboundRequest, @Sendable (OutboundResult) -> Void)] = []
        var started = false
        var stopping = false
    }

    private let queue = Locked(Queue())
    private let handles: CurlHandles
    private let finished = DispatchSemaphore(value: 0)
    /// Run once per turn of the thread, after completions: the longest the thread may sleep.
    private let turnHook = Locked<TurnHook?>(nil)

    init() {
        HTTPClient.initializeOnce()
        handles = CurlHandles()
    }

    /// Sets what the thread runs at each turn (before `start`): it returns the longest the
    /// thread may sleep (nil: until woken).
    func onTurn(_ hook: @escaping @Sendable () -> Duration?) {
        turnHook.withLock { $0 = TurnHook(call: hook) }
    }

    private static let global: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()
    private static func initializeOnce() { _ = global }

    func start() {
        queue.withLock { $0.started = true }
        let thread = Thread { [self] in run() }
        thread.name = "obs-webhooks"
        thread.start()
    }

    /// Ends the thread; transfers under way are dropped without completing. Waits at most 5 s
    /// (one `curl_multi_perform` turn; a thread still in one then ends on its own).
    func stop() {
        let running = queue.withLock { queue -> Bool in
            defer { queue.stopping = true }
            return queue.started && !queue.stopping
        }
        guard running else { return }
        wake()
        _ = finished.wait(timeout: .now() + 5)
    }

    /// Queues a request; `completion` runs on the client's thread once it ends.
    func send(_ request: OutboundRequest, completion: @escaping @Sendable (OutboundResult) -> Void) {
        queue.withLock { $0.submitted.append((request, completion)) }
        wake()
    }

    /// Makes the thread take a turn now (from any thread).
    func wake() { curl_multi_wakeup(handles.multi) }

    private func run() {
        while true {
            let (submitted, stopping) = queue.withLock { queue in
                defer { queue.submitted.removeAll() }
                return (queue.submitted, queue.stopping)
            }
            if stopping { break }
            for (request, completion) in submitted { handles.add(request, completion) }
            var running: Int32 = 0
            curl_multi_perform(handles.multi, &running)
            for (completion, result) in handles.takeFinished() { completion(result) }
            let wait = turnHook.withLock { $0 }?.call()
            if queue.withLock({ !$0.submitted.isEmpty || $0.stopping }) { continue }
            let milliseconds = wait.map { Int32(clamping: max(0, $0.milliseconds)) } ?? 60_000
            curl_multi_poll(handles.multi, nil, 0, min(milliseconds, 60_000), nil)
        }
        handles.close()
        finished.signal()
    }
}

/// A closure in a struct, for `Locked`.
private struct TurnHook: Sendable {
    let call: @Sendable () -> Duration?
}

extension Duration {
    /// Whole milliseconds, rounded up (a wait never ends before its deadline).
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    }
}

/// The multi handle and the transfers under way.
///
/// `@unchecked Sendable`: only the client's thread uses it, but for `multi` in
/// `curl_multi_wakeup`, which libcurl allows from any thread.
private final class CurlHandles: @unchecked Sendable {
    let multi: UnsafeMutableRawPointer
    /// Transfers under way, by their easy handle.
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]

    init() {
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed (out of memory)") }
        self.multi = multi
    }

    func add(_ request: OutboundRequest, _ completion: @escaping @Sendable (OutboundResult) -> Void) {
        guard let easy = curl_easy_init() else { return completion(.failed("curl_easy_init failed")) }
        let transfer = Transfer(easy: easy, request: request, completion: completion)
        transfers[easy] = transfer
        curl_multi_add_handle(multi, easy)
    }

    /// The transfers that ended since the last call, taken out, with their results.
    func takeFinished() -> [(@Sendable (OutboundResult) -> Void, OutboundResult)] {
        var done: [(@Sendable (OutboundResult) -> Void, OutboundResult)] = []
        var code = CURLE_OK
        while let easy = ccurl_multi_done(multi, &code) {
            guard let transfer = transfers.removeValue(forKey: easy) else { continue }
            done.append((transfer.completion, transfer.result(code.rawValue)))
            curl_multi_remove_handle(multi, easy)
            transfer.release()
        }
        return done
    }

    func close() {
        for (easy, transfer) in transfers {
            curl_multi_remove_handle(multi, easy)
            transfer.release()
        }
        transfers.removeAll()
        curl_multi_cleanup(multi)
    }
}
