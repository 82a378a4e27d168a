import Testing

@testable import ObsServer

/// Settings are converted by `makeConfig` and checked by `ServerConfig.validate()` alone: the
/// flags, the `OBS_*` variables and a config built in code meet the same rules.
@Suite("Server configuration: one place checks every setting")
struct ConfigTests {
    @Test(
        "the heartbeat and the commit timeout, from flags or variables, are refused outside their ranges",
        arguments: [
            (["--heartbeat-interval", "0"], [:], "--heartbeat-interval"),
            (["--heartbeat-interval", "16"], [:], "--heartbeat-interval"),
            ([], ["OBS_HEARTBEAT_INTERVAL": "16"], "--heartbeat-interval"),
            (["--commit-timeout", "0.05"], [:], "--commit-timeout"),
            (["--commit-timeout", "3601"], [:], "--commit-timeout"),
            (["--commit-timeout", "nan"], [:], "--commit-timeout"),
            (["--commit-timeout", "inf"], [:], "--commit-timeout"),
            ([], ["OBS_COMMIT_TIMEOUT": "1e300"], "--commit-timeout"),
        ] as [([String], [String: String], String)])
    func refused(arguments: [String], environment: [String: String], flag: String) throws {
        let command = try ObsServerCommand.parse(arguments)
        let error = #expect(throws: (any Error).self) { try command.makeConfig(environment: environment) }
        #expect(error.map { "\($0)" }?.contains(flag) == true, "the refusal names \(flag)")
    }

    @Test("a config built in code meets the same rules")
    func builtInCode() {
        var config = ServerConfig()
        config.heartbeatInterval = .seconds(16)
        #expect(throws: ConfigError.self) { try config.validate() }
        config = ServerConfig()
        config.commitTimeout = .milliseconds(50)
        #expect(throws: ConfigError.self) { try config.validate() }
    }

    @Test("the ends of both ranges are accepted and converted", arguments: [("1", "0.1"), ("15", "3600")])
    func accepted(heartbeat: String, timeout: String) throws {
        let config = try ObsServerCommand.parse(["--heartbeat-interval", heartbeat, "--commit-timeout", timeout])
            .makeConfig(environment: [:])
        #expect(config.heartbeatInterval == .seconds(Int(heartbeat)!))
        #expect(config.commitTimeout == .milliseconds(Int64((Double(timeout)! * 1000).rounded())))
    }
}
