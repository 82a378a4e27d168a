import Foundation
import Logging
import ObservationCore

/// Everything the server is configured with. Built from flags and `OBS_*`
/// variables by `ObsServerCommand`; tests build it directly.
struct ServerConfig: Sendable {
    var host = "127.0.0.1"
    /// 0 lets the kernel choose (tests).
    var port: UInt16 = 8080
    var dataDir: String?
    /// The cluster's PostgreSQL URL (`--cluster`): this node serves the cluster's state instead
    /// of its own (excludes `dataDir`).
    var cluster: String?
    /// This node's name in the cluster (`--node-id`); nil: the host name and port.
    var nodeID: String?
    /// How durable a commit is before its answers go (`full`: fsync each group commit).
    var sync = CommitSync.full
    var publicDir = "Public"
    var token: String?
    var allowOpen = false
    /// Origins whose scripts may read the answers (`--cors-origins a,b`, or `["*"]`); empty: no
    /// CORS header at all.
    var corsOrigins: [String] = []
    var logLevel = Logger.Level.info
    /// `text` (swift-log's lines) or `json` (one object per line, for a log collector).
    var logFormat = LogFormat.text
    var threads: Int?
    var maxBodyBytes = 1_048_576
    /// The longest JSON string in a body; nil: the body limit, so that no body the body limit
    /// lets through is refused for a long string (section 9).
    var maxStringBytes: Int?
    var maxObjects = 1_000_000
    var maxObservers = 100_000
    var maxRegistrationsPerObserver = 10_000
    var maxStreams = 10_000
    /// Queries over all observers (section 12).
    var maxQueries = 10_000
    /// Stored scoped tokens (section 13).
    var maxTokens = 100_000
    /// Operations in one transaction (section 15).
    var maxTransactionOps = 100
    /// `--jwt-secret`: JWTs signed with HS256 and this secret are scoped tokens (section 13).
    var jwtSecret: String?
    /// `--jwt-public-key`: a PEM file; JWTs signed with its key (RS256, ES256 or EdDSA) are.
    var jwtPublicKey: String?
    /// `--webhook-hosts`: where delivering observers may push (section 16); nil: nowhere.
    var webhookHosts: String?
    /// Bytes of events an observer's replay buffer keeps (section 7.1).
    var maxReplayBytes = 4 << 20
    /// Bytes of events the admin stream's buffer keeps (section 7.1).
    var maxAdminReplayBytes = 64 << 20
    /// Postings the `asap` and `idle` queues hold together, and their bytes.
    var maxQueuedNotifications = 10_000
    var maxQueuedNotificationBytes = 16 << 20
    /// Idempotency keys kept at once (each for 10 minutes; past it the oldest go early).
    var maxIdempotencyKeys = 100_000
    /// Bytes of kept answers at once (past it the oldest keys go early).
    var maxIdempotencyBytes = 64 << 20
    /// Open connections of any kind; nil: the stream limit plus 1,024 for requests.
    var maxConnections: Int?
    /// Open connections from one client address; 0: no limit (a load balancer is one address).
    var maxConnectionsPerAddress = 0
    /// Seconds without progress before a connection is closed (idle keep-alive, slow headers);
    /// parked streams never time out, nor do streams whose client stopped reading (they are
    /// parked too: the byte budget and `peerTimeout` end them).
    var connectionTimeout = 60
    /// Bytes of libmicrohttpd buffer per connection: request headers must fit in it (431
    /// otherwise; cookies count twice, libmicrohttpd copies them), and an idle event stream
    /// holds all of it.
    var connectionMemory = 8 * 1024
    /// Seconds TCP keeps trying a silent stream client (keep-alive probes, `TCP_USER_TIMEOUT`).
    var peerTimeout = 30
    /// How long a write's answer may wait for durability (section 10): past it the write is
    /// rolled back (a data directory) or refused (a cluster's queued commands), answered 503.
    var commitTimeout: Duration = .seconds(5)
    /// With `--data-dir`: a checkpoint every this many commands (restarts replay fewer).
    var checkpointCommands = 10_000
    /// How often an idle event stream gets a `: keep-alive` comment (the contract: at most 15 s).
    var heartbeatInterval: Duration = .seconds(15)
    /// How long the server must go without a request before `idle` postings go out (the contract: 50 ms).
    var idleQuiet: Duration = .milliseconds(50)

    /// Whether `host` only accepts connections from this machine.
    var isLoopback: Bool {
        host == "::1" || host.hasPrefix("127.")
    }

    var limits: StoreLimits {
        StoreLimits(
            maxObjects: maxObjects, maxObservers: maxObservers,
            maxRegistrationsPerObserver: maxRegistrationsPerObserver, maxStreams: maxStreams,
            maxReplayBytes: maxReplayBytes, maxAdminReplayBytes: maxAdminReplayBytes,
            maxQueuedNotifications: maxQueuedNotifications, maxQueuedNotificationBytes: maxQueuedNotificationBytes,
            maxIdempotencyKeys: maxIdempotencyKeys, maxIdempotencyBytes: maxIdempotencyBytes, maxQueries: maxQueries,
            maxTokens: maxTokens, maxTransactionOps: maxTransactionOps)
    }

    /// The verifier of JWTs (nil: no JWT key configured); throws for a key it cannot use.
    func jwtVerifier() throws -> JWTVerifier? {
        if let jwtSecret { return JWTVerifier(secret: jwtSecret) }
        guard let jwtPublicKey else { return nil }
        let pem: String
        do {
            pem = try String(contentsOfFile: jwtPublicKey, encoding: .utf8)
        } catch {
            throw ConfigError("--jwt-public-key \(jwtPublicKey) cannot be read: \(error.localizedDescription)")
        }
        do {
            return try JWTVerifier(publicKeyPEM: pem)
        } catch {
            throw ConfigError("--jwt-public-key \(jwtPublicKey): \(error.message)")
        }
    }

    /// The cross-origin policy (nil: none; `validate()` refuses origins it cannot use).
    var cors: CORSPolicy? { corsOrigins.isEmpty ? nil : try? CORSPolicy(origins: corsOrigins) }

    /// This node's name in the cluster: `nodeID`, or the host name and port.
    var nodeName: String { nodeID ?? "\(ProcessInfo.processInfo.hostName):\(port)" }

    var effectiveMaxStringBytes: Int { maxStringBytes ?? maxBodyBytes }
    var effectiveMaxConnections: Int { maxConnections ?? maxStreams + 1024 }

    /// Refuses settings the server cannot run with safely.
    func validate() throws(ConfigError) {
        if token == nil, !isLoopback, !allowOpen {
            throw ConfigError(
                "refusing to listen on \(host) without a token: set --token (OBS_TOKEN), "
                    + "or pass --allow-open to serve everyone on the network without one")
        }
        if let token, token.isEmpty { throw ConfigError("--token must not be empty") }
        if jwtSecret != nil, jwtPublicKey != nil {
            throw ConfigError("--jwt-secret and --jwt-public-key exclude each other: JWTs are checked with one key")
        }
        // HS256 with a short secret can be searched offline from one token (RFC 7518 3.2: at least 256 bits).
        if let jwtSecret, jwtSecret.utf8.count < 32 { throw ConfigError("--jwt-secret must be at least 32 bytes") }
        if let webhookHosts { _ = try WebhookHosts(webhookHosts) }
        for (name, value) in [
            ("max-body-bytes", maxBodyBytes), ("max-string-bytes", effectiveMaxStringBytes),
            ("max-objects", maxObjects), ("max-observers", maxObservers),
            ("max-registrations-per-observer", maxRegistrationsPerObserver), ("max-streams", maxStreams),
            ("max-queries", maxQueries), ("max-tokens", maxTokens),
            ("max-transaction-ops", maxTransactionOps), ("max-replay-bytes", maxReplayBytes),
            ("max-admin-replay-bytes", maxAdminReplayBytes),
            ("max-queued-notifications", maxQueuedNotifications),
            ("max-queued-notification-bytes", maxQueuedNotificationBytes), ("max-idempotency-keys", maxIdempotencyKeys),
            ("max-idempotency-bytes", maxIdempotencyBytes),
            ("max-connections", effectiveMaxConnections), ("connection-timeout", connectionTimeout),
            ("peer-timeout", peerTimeout), ("checkpoint-commands", checkpointCommands),
        ] where value < 1 {
            throw ConfigError("--\(name) must be at least 1")
        }
        if cluster != nil, dataDir != nil {
            throw ConfigError("--cluster and --data-dir exclude each other: a cluster keeps its state in PostgreSQL")
        }
        if let cluster, cluster.isEmpty { throw ConfigError("--cluster must not be empty") }
        if let nodeID, nodeID.isEmpty || nodeID.contains("#") {
            throw ConfigError("--node-id must be a non-empty name without '#'")
        }
        if connectionMemory < 4096 || connectionMemory > 1 << 20 {
            throw ConfigError("--connection-memory must be 4096–1048576 bytes")
        }
        if maxConnectionsPerAddress < 0 { throw ConfigError("--max-connections-per-address must be 0 or more") }
        if !corsOrigins.isEmpty { _ = try CORSPolicy(origins: corsOrigins) }
        if commitTimeout < .milliseconds(100) || commitTimeout > .seconds(3600) {
            throw ConfigError("--commit-timeout must be 0.1–3600 seconds")
        }
        if heartbeatInterval <= .zero || heartbeatInterval > .seconds(15) {
            throw ConfigError("--heartbeat-interval must be 1–15 seconds (the contract: at least every 15 s)")
        }
    }
}

/// A configuration the server refuses, with the reason.
struct ConfigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
