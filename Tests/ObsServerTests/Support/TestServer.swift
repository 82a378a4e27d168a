import Logging
import ObservationCore

@testable import ObsServer

/// The real server, started on a free port for one test, stopped by `stop()`.
final class TestServer {
    let server: Server
    let port: UInt16

    init(configure: (inout ServerConfig) -> Void = { _ in }) throws {
        var config = ServerConfig()
        config.port = 0
        config.threads = 2
        config.publicDir = "Public"
        configure(&config)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        server = try Server(config: config, logger: logger)
        port = try server.start()
    }

    func client() -> TestClient { TestClient(port: port) }

    func stop() { server.stop() }

    deinit { server.stop() }
}

/// Runs `body` against a fresh server and client, stopping the server afterwards.
@discardableResult
func withServer<T>(
    configure: (inout ServerConfig) -> Void = { _ in }, _ body: (TestServer, TestClient) throws -> T
) throws -> T {
    let server = try TestServer(configure: configure)
    defer { server.stop() }
    let client = server.client()
    defer { client.close() }
    return try body(server, client)
}
