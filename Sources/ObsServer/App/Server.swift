import Foundation
import Logging
import ObservationCore

/// A configured ObsServer, not yet listening: the wiring of its replica (in memory, a data
/// directory or a cluster), the API, the middleware in front of it, the timer and the daemon.
///
/// `start()` binds and serves; `stop()` closes every connection. Tests build one with port 0
/// and read the chosen port from `start()`.
final class Server: Sendable {
    let config: ServerConfig
    /// Where commands go and reads wait.
    let replica: any Replica
    let router: Router
    private let daemon: HTTPDaemon
    private let timer: ServiceTimer
    /// Holds the data directory's lock for the server's lifetime (nil: no data directory).
    private let dataDirectory: DataDirectory?
    /// The open streams and waiting polls.
    private let hub: StreamHub
    /// Deliveries to URLs (section 16).
    private let webhooks: WebhookDeliverer

    var store: Store { replica.store }

    init(config: ServerConfig, logger: Logger) throws {
        try config.validate()
        let counters = ServiceCounters()
        let hub = StreamHub()
        let replica: any Replica
        let timer: ServiceTimer
        let webhooks: WebhookDeliverer
        let webhookHosts = try config.webhookHosts.map { list throws(ConfigError) in try WebhookHosts(list) } ?? .none
        if let url = config.cluster {
            let store = Store(limits: config.limits, renderer: .http)
            let node = ClusterNode(
                settings: ClusterSettings(
                    url: url, nodeID: config.nodeName,
                    checkpointEvery: config.checkpointCommands, commitTimeout: config.commitTimeout),
                store: store, limits: config.limits, logger: logger)
            replica = ClusterReplica(store: store, node: node, hub: hub, maxStreams: config.maxStreams)
            timer = Self.keeperTimer(node, store: store, hub: hub, config: config)
            node.on(.init(cutOff: { hub.closeAll() }, keeper: { timer.reschedule() }))
            // The keeper delivers: one node at a time (CLUSTER.md); a takeover starts from the acknowledged cursor.
            webhooks = WebhookDeliverer(
                store: store, hosts: webhookHosts,
                issue: { action in node.submit(Command(time: .now(), action, as: .server)) { _ in } },
                active: { node.isKeeper })
            dataDirectory = nil
        } else {
            if let path = config.dataDir {
                let directory = try DataDirectory(path: path)
                replica = try Self.open(directory, config: config, logger: logger)
                dataDirectory = directory
            } else {
                replica = MemoryReplica(store: Store(limits: config.limits, renderer: .http))
                dataDirectory = nil
            }
            timer = ServiceTimer(
                store: replica.store, hub: hub, heartbeatInterval: config.heartbeatInterval,
                idleQuiet: config.idleQuiet, lastRequest: { counters.lastRequest })
            webhooks = WebhookDeliverer(
                store: replica.store, hosts: webhookHosts,
                issue: { [store = replica.store] action in _ = try? store.as(.server).issue(action) })
        }
        // A delivering observer made (its command tells the timer) or removed with its token: look again.
        replica.store.onTimerChange {
            timer.reschedule()
            webhooks.refresh()
        }
        replica.store.deferDeliveries(AnswerFirst.deferDeliveries)
        hub.polls.onEarlierDeadline { timer.reschedule() }
        hub.onEarlierExpiry { timer.reschedule() }
        replica.store.onTokensEnded {
            hub.revoke($0)
            webhooks.refresh()
        }

        var builder = RouterBuilder()
        let metrics = RequestMetrics()
        ServiceAPI(
            replica: replica, counters: counters, hub: hub, metrics: metrics,
            maxStringBytes: config.effectiveMaxStringBytes, webhooks: webhooks, webhookHosts: webhookHosts
        )
        .register(in: &builder)
        let staticFiles = StaticFiles(root: config.publicDir)
        let router = builder.build(logger: logger) { request, _ in .now(try staticFiles.serve(request)) }
        // In order: activity first (it counts every request), CORS before the token check
        // (preflights carry none), the token before the read barrier (a refusal waits for nothing).
        var middleware: [any Middleware] = [ActivityMiddleware(counters: counters)]
        if let cors = config.cors { middleware.append(CORSMiddleware(policy: cors)) }
        middleware.append(
            AuthMiddleware(
                authenticator: Authenticator(token: config.token, store: replica.store, jwt: try config.jwtVerifier()),
                replica: replica))
        // Reads wait only on a cluster node (elsewhere the step would pass every request on).
        if replica.hasReadBarrier { middleware.append(ReadBarrierMiddleware(replica: replica)) }

        var options = HTTPDaemonOptions(
            host: config.host, port: config.port, maxBodyBytes: config.maxBodyBytes, logger: logger)
        if let threads = config.threads { options.threads = threads }
        options.connectionLimit = config.effectiveMaxConnections
        options.connectionsPerAddress = config.maxConnectionsPerAddress
        options.connectionTimeout = config.connectionTimeout
        options.connectionMemoryLimit = config.connectionMemory
        options.peerTimeout = .seconds(config.peerTimeout)
        self.daemon = try HTTPDaemon(
            options: options,
            chain: MiddlewareChain(middleware, observers: [MetricsObserver(metrics: metrics)], router: router))
        self.config = config
        self.replica = replica
        self.router = router
        self.timer = timer
        self.hub = hub
        self.webhooks = webhooks
    }

    /// A cluster node's timer: the keeper decides leases and queues for the cluster, through
    /// its log (without waiting: the outcome, within the commit timeout, reports to the timer);
    /// quiet for `idle` postings is quiet in the log. A command whose outcome is not known is
    /// tried again (theirs are conditional: applying one twice or late changes nothing twice).
    private static func keeperTimer(_ node: ClusterNode, store: Store, hub: StreamHub, config: ServerConfig)
        -> ServiceTimer
    {
        ServiceTimer(
            store: store, hub: hub, heartbeatInterval: config.heartbeatInterval, idleQuiet: config.idleQuiet,
            lastRequest: { node.lastApplied }, decides: { node.isKeeper }
        ) { action, done in
            guard node.isKeeper else { return done(false) }
            node.submit(Command(time: .now(), action, as: .server)) { result in
                guard case .failure(let error) = result else { return done(true) }
                done(error.code != .unavailable && error.code != .outcomeUnknown)
            }
        }
    }

    /// Starts the replica (its committer, or its cluster threads), then listening and the
    /// lease/heartbeat timer; returns the bound port.
    func start() throws -> UInt16 {
        try replica.start()
        let port = try daemon.start()
        timer.start()
        webhooks.start()
        return port
    }

    /// Stops serving: answers every waiting poll, ends every event stream, closes every
    /// connection, stops the timer, then stops the replica (what is left goes to the data directory).
    func stop() {
        hub.polls.stop()
        daemon.stop()
        timer.stop()
        webhooks.stop()  // before the replica: its last acknowledgements are written with the rest
        replica.stop()
    }

    /// Opens the data directory's database, rebuilds the store from it, and makes its committer.
    private static func open(_ directory: DataDirectory, config: ServerConfig, logger: Logger) throws -> DurableReplica
    {
        let started = ContinuousClock.now
        do {
            let database = try StoreDatabase(directory: directory.path, sync: config.sync)
            let image = try database.load()
            let store = try Store(limits: config.limits, renderer: .http, restoring: image)
            let stats = store.stats()
            logger.info(
                """
                data directory \(directory.path): \(stats.objects) objects, \(stats.classes) classes, \
                \(stats.observers) observers, \(stats.observations) observations, revision \(stats.revision) \
                (a checkpoint and \(image.commands.count) commands after it)
                """)
            let committer = Committer(
                store: store, database: database, durable: image.lastPosition,
                checkpointEvery: config.checkpointCommands, commitTimeout: config.commitTimeout,
                loaded: ContinuousClock.now - started, logger: logger)
            return DurableReplica(store: store, committer: committer)
        } catch let error as SQLiteError {
            throw ConfigError("data directory \(directory.path): \(error)")
        } catch let error as PersistenceError {
            throw ConfigError("data directory \(directory.path): \(error)")
        }
    }
}
