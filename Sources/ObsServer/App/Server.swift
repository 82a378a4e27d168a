import Foundation
import Logging
import ObservationCore

/// A configured ObsServer: the store, the API and the HTTP daemon, not yet listening.
///
/// `start()` binds and serves; `stop()` closes every connection. Tests build
/// one with port 0 and read the chosen port from `start()`.
final class Server: Sendable {
    let config: ServerConfig
    let store: Store
    let router: Router
    private let daemon: HTTPDaemon
    private let timer: ServiceTimer

    init(config: ServerConfig, logger: Logger) throws {
        try config.validate()
        if let dataDir = config.dataDir { try Self.prepare(dataDir: dataDir) }
        let store = Store(
            limits: StoreLimits(
                maxObjects: config.maxObjects, maxObservers: config.maxObservers,
                maxRegistrationsPerObserver: config.maxRegistrationsPerObserver, maxStreams: config.maxStreams))
        let counters = ServiceCounters()
        let hub = StreamHub()
        let timer = ServiceTimer(
            store: store, hub: hub, heartbeatInterval: config.heartbeatInterval, idleQuiet: config.idleQuiet,
            lastRequest: { counters.lastRequest })
        var builder = RouterBuilder()
        ServiceAPI(store: store, counters: counters, hub: hub, timer: timer).register(in: &builder)
        let staticFiles = StaticFiles(root: config.publicDir)
        let router = builder.build(logger: logger) { request, _ in try staticFiles.serve(request.path) }
        let authenticator = Authenticator(token: config.token, store: store)
        var options = HTTPDaemonOptions(
            host: config.host, port: config.port, maxBodyBytes: config.maxBodyBytes, logger: logger)
        if let threads = config.threads { options.threads = threads }
        options.connectionLimit = max(1024, config.maxStreams + 1024)
        self.daemon = HTTPDaemon(options: options) { request in
            counters.recordRequest()
            // Quiet (for idle postings) counts from the moment the answer is ready, not from arrival.
            defer { counters.recordActivity() }
            if let refusal = authenticator.refusal(for: request) { return refusal.response }
            return router.respond(to: request)
        }
        self.config = config
        self.store = store
        self.router = router
        self.timer = timer
    }

    /// Starts listening (and the lease/heartbeat timer); returns the bound port.
    func start() throws -> UInt16 {
        let port = try daemon.start()
        timer.start()
        return port
    }

    /// Stops serving: ends every event stream, closes every connection, stops the timer.
    func stop() {
        daemon.stop()
        timer.stop()
    }

    /// Creates the data directory if needed and checks that it is writable.
    private static func prepare(dataDir: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: dataDir, withIntermediateDirectories: true)
        } catch {
            throw ConfigError("cannot create the data directory \(dataDir): \(error.localizedDescription)")
        }
        guard FileManager.default.isWritableFile(atPath: dataDir) else {
            throw ConfigError("the data directory \(dataDir) is not writable")
        }
    }
}
