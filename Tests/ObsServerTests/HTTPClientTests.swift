import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("HTTPClient: libcurl's multi interface against a loopback receiver")
struct HTTPClientTests {
    /// Sends one request and waits (bounded) for its result.
    private func exchange(
        _ client: HTTPClient, port: UInt16, path: String = "/hook", timeout: Duration = .seconds(5),
        permits: @escaping @Sendable (String, Int) -> Bool = { _, _ in true }
    ) throws -> (OutboundResult, Duration) {
        let result = Locked<OutboundResult?>(nil)
        let started = ContinuousClock.now
        let request = OutboundRequest(
            url: "http://127.0.0.1:\(port)\(path)", headers: [("webhook-id", "obs_1:3")], body: Array("{\"a\":1}".utf8),
            timeout: timeout, permits: permits)
        client.send(request) { outcome in result.withLock { $0 = outcome } }
        let deadline = ContinuousClock.now + .seconds(15)
        while ContinuousClock.now < deadline {
            if let outcome = result.withLock({ $0 }) { return (outcome, ContinuousClock.now - started) }
            Thread.sleep(forTimeInterval: 0.005)
        }
        throw TestClientError("no result within 15 s")
    }

    private func withClient(_ body: (HTTPClient) throws -> Void) rethrows {
        let client = HTTPClient()
        client.start()
        defer { client.stop() }
        try body(client)
    }

    @Test("a 2xx answer is its status; the body and headers arrive as sent")
    func answered() throws {
        let receiver = try LoopbackReceiver(mode: .status(204))
        defer { receiver.stop() }
        try withClient { client in
            let (result, _) = try exchange(client, port: receiver.port)
            #expect(result == .status(204))
            let received = try #require(receiver.received.first)
            #expect(received.body == Array("{\"a\":1}".utf8))
            #expect(received.headers["content-type"] == "application/json")
            #expect(received.headers["webhook-id"] == "obs_1:3")
            #expect(received.headers["expect"] == nil)
        }
    }

    @Test("other statuses are reported as they are; a redirect is not followed", arguments: [500, 404, 307])
    func statuses(status: Int) throws {
        let receiver = try LoopbackReceiver(mode: .status(status))
        defer { receiver.stop() }
        try withClient { client in
            let (result, _) = try exchange(client, port: receiver.port)
            #expect(result == .status(status))
            #expect(receiver.received.count == 1)
        }
    }

    @Test("a receiver that never answers times out after the request's timeout")
    func timeout() throws {
        let receiver = try LoopbackReceiver(mode: .hang)
        defer { receiver.stop() }
        try withClient { client in
            let (result, elapsed) = try exchange(client, port: receiver.port, timeout: .milliseconds(700))
            #expect(result == .failed("timeout"))
            #expect(elapsed >= .milliseconds(690) && elapsed < .seconds(3))
        }
    }

    @Test("a connection closed without an answer, or refused, is a failure")
    func closedAndRefused() throws {
        let receiver = try LoopbackReceiver(mode: .close)
        defer { receiver.stop() }
        try withClient { client in
            guard case .failed = try exchange(client, port: receiver.port).0 else {
                Issue.record("a closed connection must fail")
                return
            }
            let closedPort = receiver.port
            receiver.stop()
            guard case .failed = try exchange(client, port: closedPort).0 else {
                Issue.record("a refused connection must fail")
                return
            }
        }
    }

    @Test("an address the request does not permit is never connected to")
    func refusedAddress() throws {
        let receiver = try LoopbackReceiver(mode: .status(200))
        defer { receiver.stop() }
        try withClient { client in
            let asked = Locked<[String]>([])
            let (result, _) = try exchange(client, port: receiver.port) { host, port in
                asked.withLock { $0.append("\(host):\(port)") }
                return false
            }
            #expect(result == .failed("address 127.0.0.1:\(receiver.port) is not allowed by --webhook-hosts"))
            #expect(asked.withLock { $0 } == ["127.0.0.1:\(receiver.port)"])
            Thread.sleep(forTimeInterval: 0.1)
            #expect(receiver.received.isEmpty)
        }
    }

    @Test("many requests at once each complete, over few connections")
    func concurrent() throws {
        let receiver = try LoopbackReceiver(mode: .status(200))
        defer { receiver.stop() }
        withClient { client in
            let results = Locked<[OutboundResult]>([])
            for index in 0..<50 {
                let request = OutboundRequest(
                    url: "http://127.0.0.1:\(receiver.port)/\(index)", body: [], timeout: .seconds(5))
                client.send(request) { outcome in results.withLock { $0.append(outcome) } }
            }
            let deadline = ContinuousClock.now + .seconds(10)
            while results.withLock({ $0.count }) < 50, ContinuousClock.now < deadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
            #expect(results.withLock { $0 }.count == 50)
            #expect(results.withLock { $0 }.filter { $0 != .status(200) } == [])
        }
    }
}
