import ArgumentParser
import CLinux
import Foundation
import Logging

/// `obs-server`: parses flags and `OBS_*` variables, then runs the server until SIGINT/SIGTERM.
@main
struct ObsServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "obs-server",
        abstract: "Key-Value Observing as a network service.",
        discussion: """
            Every option can also be given as an environment variable: OBS_ and the option's name in \
            upper case with - as _ (OBS_PORT, OBS_MAX_OBJECTS, OBS_ALLOW_OPEN=1). A flag wins over its variable.
            """)

    @Option(help: "Address to listen on (numeric IPv4/IPv6, or localhost).") var host: String?
    @Option(help: "TCP port (0: any free port).") var port: UInt16?
    @Option(help: "Directory for the server's data (created on first start).") var dataDir: String?
    @Option(
        help:
            "Join a cluster whose state is in this PostgreSQL database (postgres://user@host/db); excludes --data-dir."
    ) var cluster: String?
    @Option(help: "This node's name in the cluster (default: host name and port).") var nodeId: String?
    @Option(
        help: """
            full: fsync every group commit (answered writes survive a power cut); normal: fsync at checkpoints \
            (answered writes survive kill -9 and server crashes).
            """) var sync: String?
    @Option(help: "Directory of the dashboard's static files.") var publicDir: String?
    @Option(help: "Require 'Authorization: Bearer <token>' on the API.") var token: String?
    @Flag(help: "Allow listening on a non-loopback address without a token.") var allowOpen = false
    @Option(
        help: """
            Let scripts from these origins use the API (comma-separated scheme://host[:port], or * for any): \
            CORS preflights are answered and answers carry Access-Control-Allow-Origin.
            """) var corsOrigins: String?
    @Option(help: "trace, debug, info, notice, warning, error or critical.") var logLevel: String?
    @Option(
        help: """
            text, or json: one JSON object per line (time, level, message, and fields such as requestId, \
            observer, node) for a log collector.
            """) var logFormat: String?
    @Option(help: "HTTP worker threads (default: usable cores).") var threads: Int?
    @Option(help: "Largest request body in bytes.") var maxBodyBytes: Int?
    @Option(help: "Longest JSON string (value or member name) in a request body, in bytes (default: the body limit).")
    var maxStringBytes: Int?
    @Option(help: "Most objects the server holds.") var maxObjects: Int?
    @Option(help: "Most observers the server holds.") var maxObservers: Int?
    @Option(help: "Most observations, subscriptions and queries per observer.") var maxRegistrationsPerObserver: Int?
    @Option(help: "Most queries over all observers (default 10000).") var maxQueries: Int?
    @Option(help: "Most scoped tokens the admin may make (default 100000).") var maxTokens: Int?
    @Option(help: "Most operations in one transaction (default 100; more answer 429).") var maxTransactionOps: Int?
    @Option(help: "Accept JWTs signed with HS256 and this secret (at least 32 bytes) as scoped tokens.")
    var jwtSecret: String?
    @Option(help: "Accept JWTs signed with this PEM public key (RSA: RS256, P-256: ES256, Ed25519: EdDSA).")
    var jwtPublicKey: String?
    @Option(help: "Hosts delivering observers may push to: host or host:port patterns, * any run (section 16).")
    var webhookHosts: String?
    @Option(help: "Most open event streams, the admin stream included.") var maxStreams: Int?
    @Option(help: "Bytes of events each observer's replay buffer keeps (default 4 MiB).") var maxReplayBytes: Int?
    @Option(help: "Bytes of events the admin stream's buffer keeps (default 64 MiB).") var maxAdminReplayBytes: Int?
    @Option(help: "Postings the asap and idle queues hold together (default 10000).") var maxQueuedNotifications: Int?
    @Option(help: "Bytes of postings the asap and idle queues hold together (default 16 MiB).")
    var maxQueuedNotificationBytes: Int?
    @Option(help: "Idempotency keys kept at once, each for 10 minutes (default 100000).") var maxIdempotencyKeys: Int?
    @Option(help: "Bytes of answers idempotency keys keep at once (default 64 MiB).") var maxIdempotencyBytes: Int?
    @Option(help: "Most open connections (default: --max-streams + 1024).") var maxConnections: Int?
    @Option(help: "Most open connections from one client address (default 0: no limit).")
    var maxConnectionsPerAddress: Int?
    @Option(
        help: """
            Bytes of buffer each connection gets for its request headers and answer framing (default 8192: \
            about 7.5 KB of headers, 3.5 KB of them cookies); requests whose headers do not fit get 431.
            """) var connectionMemory: Int?
    @Option(help: "Seconds without progress before a connection is closed (default 60).") var connectionTimeout: Int?
    @Option(help: "Seconds TCP keeps trying a stream client that does not answer (default 30).") var peerTimeout: Int?
    @Option(help: "Seconds between keep-alive comments on an idle event stream, 1–15 (default 15).")
    var heartbeatInterval: Int?
    @Option(
        help: """
            Seconds a write's answer may wait for durability (default 5): a write the data directory or the \
            cluster's database cannot take by then is undone and answered 503 with Retry-After; on a cluster \
            node, one sent whose outcome is unknown answers 504 outcomeUnknown (repeat it with the same \
            Idempotency-Key).
            """) var commitTimeout: Double?
    @Option(help: "With --data-dir: a checkpoint every this many commands (default 10000).")
    var checkpointCommands: Int?
    @Option(
        help: """
            Apply the commands in this file (one encoded command per line) to an empty in-memory state, print \
            a digest of every answer and event as JSON, and exit (checks that replicas agree).
            """) var replay: String?

    func run() throws {
        let config = try makeConfig(environment: ProcessInfo.processInfo.environment)
        if let replay {
            print(String(decoding: try Replay.run(file: replay, limits: config.limits).json.encoded(), as: UTF8.self))
            return
        }
        LoggingSystem.bootstrap { label in
            switch config.logFormat {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = config.logLevel
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = config.logLevel
                return handler
            }
        }
        var logger = Logger(label: "obs-server")
        // A cluster node's lines say which node wrote them (the server's loggers all derive from this one).
        if config.cluster != nil { logger[metadataKey: "node"] = .string(config.nodeName) }
        // One malloc arena for every thread: a thread's own arena grows its heap exactly as far as
        // each allocation needs, one mprotect(2) each time (10 per W2 write), the main one by a pad.
        _ = clinux_use_one_malloc_arena()
        Signals.blockTermination()
        let server: Server
        let port: UInt16
        do {
            server = try Server(config: config, logger: logger)
            port = try server.start()
        } catch {
            logger.critical("\(error)")
            throw ExitCode(2)
        }
        let host = config.host.contains(":") ? "[\(config.host)]" : config.host
        let access = config.token == nil ? "open (no token: anyone who can reach it may use it)" : "token required"
        logger.notice("obs-server listening on http://\(host):\(port)/ (dashboard at /, API at /v1), \(access)")
        let signal = Signals.waitForTermination()
        logger.notice("\(signal) received: shutting down")
        server.stop()
        logger.notice("stopped")
    }

    /// Flags first, then `OBS_*` variables, then defaults.
    func makeConfig(environment: [String: String]) throws -> ServerConfig {
        func pick<T: ExpressibleByArgument>(_ flag: T?, _ name: String) throws -> T? {
            if let flag { return flag }
            let variable = "OBS_" + name.uppercased().replacingOccurrences(of: "-", with: "_")
            guard let text = environment[variable], !text.isEmpty else { return nil }
            guard let value = T(argument: text) else {
                throw ValidationError("\(variable)=\(text) is not a valid value")
            }
            return value
        }
        var config = ServerConfig()
        if let host = try pick(host, "host") { config.host = host == "localhost" ? "127.0.0.1" : host }
        if let port = try pick(port, "port") { config.port = port }
        config.dataDir = try pick(dataDir, "data-dir")
        config.cluster = try pick(cluster, "cluster")
        config.nodeID = try pick(nodeId, "node-id")
        if let publicDir = try pick(publicDir, "public-dir") { config.publicDir = publicDir }
        if let sync = try pick(sync, "sync") {
            guard let parsed = CommitSync(rawValue: sync) else {
                throw ValidationError("--sync must be full or normal")
            }
            config.sync = parsed
        }
        config.token = try pick(token, "token")
        config.jwtSecret = try pick(jwtSecret, "jwt-secret")
        config.jwtPublicKey = try pick(jwtPublicKey, "jwt-public-key")
        if let hosts = try pick(webhookHosts, "webhook-hosts") { config.webhookHosts = hosts }
        if let origins = try pick(corsOrigins, "cors-origins") {
            config.corsOrigins = origins.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        }
        config.allowOpen =
            allowOpen || ["1", "true", "yes"].contains(environment["OBS_ALLOW_OPEN"]?.lowercased() ?? "")
        if let level = try pick(logLevel, "log-level") {
            guard let parsed = Logger.Level(rawValue: level) else {
                throw ValidationError("log level must be trace, debug, info, notice, warning, error or critical")
            }
            config.logLevel = parsed
        }
        if let format = try pick(logFormat, "log-format") {
            guard let parsed = LogFormat(rawValue: format) else {
                throw ValidationError("--log-format must be text or json")
            }
            config.logFormat = parsed
        }
        config.threads = try pick(threads, "threads")
        let integers: [(Int?, String, WritableKeyPath<ServerConfig, Int>)] = [
            (maxBodyBytes, "max-body-bytes", \.maxBodyBytes), (maxObjects, "max-objects", \.maxObjects),
            (maxObservers, "max-observers", \.maxObservers),
            (maxRegistrationsPerObserver, "max-registrations-per-observer", \.maxRegistrationsPerObserver),
            (maxStreams, "max-streams", \.maxStreams), (maxQueries, "max-queries", \.maxQueries),
            (maxTokens, "max-tokens", \.maxTokens), (maxTransactionOps, "max-transaction-ops", \.maxTransactionOps),
            (maxReplayBytes, "max-replay-bytes", \.maxReplayBytes),
            (maxAdminReplayBytes, "max-admin-replay-bytes", \.maxAdminReplayBytes),
            (maxQueuedNotifications, "max-queued-notifications", \.maxQueuedNotifications),
            (maxQueuedNotificationBytes, "max-queued-notification-bytes", \.maxQueuedNotificationBytes),
            (maxIdempotencyKeys, "max-idempotency-keys", \.maxIdempotencyKeys),
            (maxIdempotencyBytes, "max-idempotency-bytes", \.maxIdempotencyBytes),
            (maxConnectionsPerAddress, "max-connections-per-address", \.maxConnectionsPerAddress),
            (connectionTimeout, "connection-timeout", \.connectionTimeout),
            (connectionMemory, "connection-memory", \.connectionMemory),
            (checkpointCommands, "checkpoint-commands", \.checkpointCommands),
            (peerTimeout, "peer-timeout", \.peerTimeout),
        ]
        for (flag, name, field) in integers {
            if let value = try pick(flag, name) { config[keyPath: field] = value }
        }
        config.maxStringBytes = try pick(maxStringBytes, "max-string-bytes")
        config.maxConnections = try pick(maxConnections, "max-connections")
        // Converted only: `validate()` checks every setting, in one place.
        if let seconds = try pick(heartbeatInterval, "heartbeat-interval") {
            config.heartbeatInterval = .seconds(seconds)
        }
        if let seconds = try pick(commitTimeout, "commit-timeout") {
            // Not a number, or past what a Duration holds: zero, which `validate()` refuses.
            let convertible = seconds.isFinite && seconds.magnitude < 1e9
            config.commitTimeout = convertible ? .milliseconds(Int64((seconds * 1000).rounded())) : .zero
        }
        do {
            try config.validate()
        } catch {
            throw ValidationError(error.description)
        }
        return config
    }
}
