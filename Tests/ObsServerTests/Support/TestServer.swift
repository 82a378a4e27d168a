import Foundation
import Logging
import ObservationCore

@testable import ObsServer

/// The real server, started on a free port for one test, stopped by `stop()`.
///
/// With `OBS_TEST_DURABLE=1` (the Makefile's sanitizer run), every test server that is
/// not given a data directory gets a fresh temporary one: the whole suite then runs
/// through the durable path (group commit, answers held until durable).
final class TestServer {
    let server: Server
    let port: UInt16
    private let temporaryDirectory: TemporaryDirectory?

    init(configure: (inout ServerConfig) -> Void = { _ in }) throws {
        var config = ServerConfig()
        config.port = 0
        config.threads = 2
        config.publicDir = "Public"
        configure(&config)
        if config.dataDir == nil, ProcessInfo.processInfo.environment["OBS_TEST_DURABLE"] == "1" {
            let directory = try TemporaryDirectory()
            config.dataDir = directory.path
            temporaryDirectory = directory
        } else {
            temporaryDirectory = nil
        }
        server = try Server(config: config, logger: testLogger())
        port = try server.start()
    }

    func client() -> TestClient { TestClient(port: port) }

    func stop() { server.stop() }

    deinit { server.stop() }
}

/// A logger that only shows critical messages (tests provoke errors on purpose).
func testLogger() -> Logger {
    var logger = Logger(label: "test")
    logger.logLevel = .critical
    return logger
}

/// A fresh directory under the system's temporary directory, removed with this object.
final class TemporaryDirectory {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "obs-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
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
