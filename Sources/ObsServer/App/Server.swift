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
    /// Writes changes to the data directory (nil: in memory only).
    let committer: Committer?
    /// Holds the data directory's lock for the server's lifetime.
    private let dataDirectory: DataDirectory?
    /// The cluster this node serves (nil: a single server).
    let cluster: ClusterNode?
    /// The open streams and waiting polls.
    private let hub: StreamHub

    init(config: ServerConfig, logger: Logger) throws {
        try config.validate()
        let limits = config.limits
        let store: Store
        if let dataDir = config.dataDir {
            let directory = try DataDirectory(path: dataDir)
            let started = ContinuousClock.now
            let (restored, database, position) = try Self.open(
                directory, sync: config.sync, limits: limits, logger: logger)
            store = restored
            dataDirectory = directory
            committer = Committer(
                store: store, database: database, durable: position, checkpointEvery: config.checkpointCommands,
                commitTimeout: config.commitTimeout, loaded: ContinuousClock.now - started, logger: logger)
        } else {
            store = Store(limits: limits, renderer: .http)
            dataDirectory = nil
            committer = nil
        }
        let cluster = config.cluster.map { url in
            ClusterNode(
                settings: ClusterSettings(
                    url: url, nodeID: config.nodeID ?? "\(ProcessInfo.processInfo.hostName):\(config.port)",
                    checkpointEvery: config.checkpointCommands, commitTimeout: config.commitTimeout),
                store: store, limits: limits, logger: logger)
        }
        let counters = ServiceCounters()
        let hub = StreamHub()
        let timer: ServiceTimer
        if let cluster {
            // The keeper decides leases and queues for the cluster, through its log; quiet for
            // `idle` postings is quiet in the log.
            timer = ServiceTimer(
                store: store, hub: hub, heartbeatInterval: config.heartbeatInterval, idleQuiet: config.idleQuiet,
                lastRequest: { cluster.lastApplied }, decides: { cluster.isKeeper }
            ) { action in
                guard cluster.isKeeper else { return false }
                if case .failure(let error) = cluster.submitAndWait(Command(time: .now(), action)),
                    error.code == .unavailable
                {
                    return false
                }
                return true
            }
            cluster.on(.init(cutOff: { hub.closeAll() }, keeper: { timer.reschedule() }))
        } else {
            timer = ServiceTimer(
                store: store, hub: hub, heartbeatInterval: config.heartbeatInterval, idleQuiet: config.idleQuiet,
                lastRequest: { counters.lastRequest })
        }
        store.onTimerChange { timer.reschedule() }
        hub.polls.onEarlierDeadline { timer.reschedule() }
        var builder = RouterBuilder()
        let metrics = RequestMetrics()
        ServiceAPI(
            store: store, counters: counters, hub: hub, metrics: metrics, committer: committer, cluster: cluster,
            maxStreams: config.maxStreams, maxStringBytes: config.effectiveMaxStringBytes
        )
        .register(in: &builder)
        let staticFiles = StaticFiles(root: config.publicDir)
        let router = builder.build(logger: logger) { request, _ in try staticFiles.serve(request) }
        let authenticator = Authenticator(token: config.token, store: store)
        var options = HTTPDaemonOptions(
            host: config.host, port: config.port, maxBodyBytes: config.maxBodyBytes, gate: committer?.gate,
            logger: logger)
        if let threads = config.threads { options.threads = threads }
        options.connectionLimit = config.effectiveMaxConnections
        options.connectionsPerAddress = config.maxConnectionsPerAddress
        options.connectionTimeout = config.connectionTimeout
        options.connectionMemoryLimit = config.connectionMemory
        options.peerTimeout = .seconds(config.peerTimeout)
        options.onAnswer = { route, status, seconds in metrics.record(route: route, status: status, seconds: seconds) }
        let cors = config.cors
        options.cors = cors
        /// Answers a request that `refusal` (the authenticator's verdict) lets through.
        let respond: @Sendable (HTTPRequest, APIError?) -> HTTPResponse = { request, refusal in
            refusal?.response ?? router.respond(to: request)
        }
        self.daemon = try HTTPDaemon(options: options) { request in
            counters.recordRequest()
            // Quiet (for idle postings) counts from the moment the answer is ready, not from arrival.
            defer { counters.recordActivity() }
            // A CORS preflight carries no token and reads nothing: answered before both are checked.
            if let preflight = cors?.preflight(request) { return preflight }
            // A cluster node answers a read (and a token it does not know yet) once it has applied
            // everything committed when the request arrived: read-your-writes across nodes.
            let refusal = authenticator.refusal(for: request)
            if let cluster, Self.readsState(request) || refusal?.status == 401 {
                let deferred = DeferredAnswer()
                // Checked again once caught up: a token may belong to an observer made elsewhere.
                cluster.afterCatchingUp {
                    deferred.resolve { respond(request, refusal == nil ? nil : authenticator.refusal(for: request)) }
                }
                return .deferred(deferred)
            }
            return respond(request, refusal)
        }
        self.config = config
        self.cluster = cluster
        self.store = store
        self.router = router
        self.timer = timer
        self.hub = hub
    }

    /// Whether a request reads the service's state (an API read, an event stream).
    private static func readsState(_ request: HTTPRequest) -> Bool {
        (request.method == .get || request.method == .head) && request.path.hasPrefix("/v1/")
    }

    /// Starts the committer, then listening (and the lease/heartbeat timer); returns the bound port.
    /// A durable store first applies `restart`: no stream is open any more, and leases count
    /// from now (a command like any other, so that a later start replays it too).
    func start() throws -> UInt16 {
        try cluster?.start()
        committer?.start()
        if committer != nil { _ = try store.issue(.restart) }
        let port = try daemon.start()
        timer.start()
        return port
    }

    /// Stops serving: answers every waiting poll, ends every event stream, closes every
    /// connection, stops the timer, then writes what is left to the data directory.
    func stop() {
        hub.polls.stop()
        daemon.stop()
        timer.stop()
        committer?.stop()
        cluster?.stop()
    }

    /// Opens the data directory's database and rebuilds the store from it.
    private static func open(_ directory: DataDirectory, sync: CommitSync, limits: StoreLimits, logger: Logger)
        throws -> (Store, StoreDatabase, position: Int)
    {
        do {
            let database = try StoreDatabase(directory: directory.path, sync: sync)
            let image = try database.load()
            let store = try Store(limits: limits, renderer: .http, restoring: image)
            let stats = store.stats()
            logger.info(
                """
                data directory \(directory.path): \(stats.objects) objects, \(stats.classes) classes, \
                \(stats.observers) observers, \(stats.observations) observations, revision \(stats.revision) \
                (a checkpoint and \(image.commands.count) commands after it)
                """)
            return (store, database, image.lastPosition)
        } catch let error as SQLiteError {
            throw ConfigError("data directory \(directory.path): \(error)")
        } catch let error as PersistenceError {
            throw ConfigError("data directory \(directory.path): \(error)")
        }
    }
}
