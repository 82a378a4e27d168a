import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("Webhooks: --webhook-hosts, the Standard Webhooks signature, the command")
struct WebhookPartsTests {
    @Test(
        "host patterns: names without case, * any run, a port or any port",
        arguments: [
            ("127.0.0.1:*", "127.0.0.1", 8080, true),
            ("127.0.0.1:*", "127.0.0.2", 8080, false),
            ("*.internal", "Billing.Internal", 443, true),
            ("*.internal", "internal", 443, false),
            ("*.internal:443", "a.internal", 80, false),
            ("10.0.*:80", "10.0.3.4", 80, true),
            ("[::1]:*", "::1", 9000, true),
            ("[::1]:*", "[::1]", 9000, true),
            ("*", "anything.example", 1, true),
        ])
    func hosts(list: String, host: String, port: Int, permitted: Bool) throws {
        #expect(try WebhookHosts(list).permits(host: host, port: port) == permitted)
    }

    @Test("nothing is allowed without the flag; a malformed list is refused")
    func noHosts() {
        #expect(!WebhookHosts.none.permits(host: "127.0.0.1", port: 80))
        #expect(throws: ConfigError.self) { try WebhookHosts("a:b") }
        #expect(throws: ConfigError.self) { try WebhookHosts("http://a") }
        #expect(throws: ConfigError.self) { try WebhookHosts(",") }
    }

    @Test("the signature of the Standard Webhooks specification's example")
    func signature() throws {
        let key = try #require(WebhookSignature.key(of: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let signature = WebhookSignature.sign(
            key: key, id: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
            body: Array(#"{"test": 2432232314}"#.utf8))
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test("secrets: whsec_ and the base64 of 24 to 64 bytes; made ones are valid")
    func secrets() {
        #expect(WebhookSignature.key(of: WebhookSignature.newSecret())?.count == 32)
        #expect(WebhookSignature.key(of: "whsec_" + Data(count: 23).base64EncodedString()) == nil)
        #expect(WebhookSignature.key(of: "whsec_" + Data(count: 65).base64EncodedString()) == nil)
        #expect(WebhookSignature.key(of: "whsec_" + Data(count: 64).base64EncodedString())?.count == 64)
        #expect(WebhookSignature.key(of: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") == nil)
        #expect(WebhookSignature.key(of: "whsec_not base64!") == nil)
    }

    @Test("acknowledge and a delivering createObserver survive the command encoding")
    func encoding() throws {
        let deliver: JSON = ["url": "http://127.0.0.1:9/h", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]
        for command in [
            Command(time: Timestamp(milliseconds: 5), .acknowledge(observer: "obs_1", through: 17), as: .server),
            Command(
                time: Timestamp(milliseconds: 6),
                .createObserver(
                    id: "obs_2", tokenHash: "ab", name: nil, lease: 60, retainObserved: false, replay: 10,
                    deliver: deliver), as: .admin),
        ] {
            #expect(try Command(decoding: command.encoded()) == command)
        }
    }

    @Test("the body: each event with its id as a string; no id for events without one")
    func body() {
        let events = [
            Event(id: 17, name: "change", data: Array(#"{"a":1}"#.utf8), revision: 3),
            Event(id: 0, name: "reset", data: Array(#"{"reason":"gap"}"#.utf8), revision: 3),
        ]
        let body = String(decoding: WebhookDeliverer.body(observer: "obs_1", events), as: UTF8.self)
        #expect(
            body
                == #"{"observer":"obs_1","events":[{"id":"17","event":"change","data":{"a":1}},{"event":"reset","data":{"reason":"gap"}}]}"#
        )
    }
}
