import Logging
import ObservationCore

/// Everything the server is configured with. Built from flags and `OBS_*`
/// variables by `ObsServerCommand`; tests build it directly.
struct ServerConfig: Sendable {
    var host = "127.0.0.1"
    /// 0 lets the kernel choose (tests).
    var port: UInt16 = 8080
    var dataDir: String?
    /// How durable a commit is before its answers go (`full`: fsync each group commit).
    var sync = CommitSync.full
    var publicDir = "Public"
    var token: String?
    var allowOpen = false
    var logLevel = Logger.Level.info
    var threads: Int?
    var maxBodyBytes = 1_048_576
    var maxStringBytes = 262_144
    var maxObjects = 1_000_000
    var maxObservers = 100_000
    var maxRegistrationsPerObserver = 10_000
    var maxStreams = 10_000
    /// How often an idle event stream gets a `: keep-alive` comment (the contract: at most 15 s).
    var heartbeatInterval: Duration = .seconds(15)
    /// How long the server must go without a request before `idle` postings go out (the contract: 50 ms).
    var idleQuiet: Duration = .milliseconds(50)

    /// Whether `host` only accepts connections from this machine.
    var isLoopback: Bool {
        host == "::1" || host.hasPrefix("127.")
    }

    /// Refuses settings the server cannot run with safely.
    func validate() throws(ConfigError) {
        if token == nil, !isLoopback, !allowOpen {
            throw ConfigError(
                "refusing to listen on \(host) without a token: set --token (OBS_TOKEN), "
                    + "or pass --allow-open to serve everyone on the network without one")
        }
        if let token, token.isEmpty { throw ConfigError("--token must not be empty") }
        for (name, value) in [
            ("max-body-bytes", maxBodyBytes), ("max-string-bytes", maxStringBytes), ("max-objects", maxObjects),
            ("max-observers", maxObservers),
            ("max-registrations-per-observer", maxRegistrationsPerObserver), ("max-streams", maxStreams),
        ] where value < 1 {
            throw ConfigError("--\(name) must be at least 1")
        }
    }
}

/// A configuration the server refuses, with the reason.
struct ConfigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
