import Foundation
import ObservationCore
import Testing

@testable import ObsServer

extension TestClient {
    func transaction(_ body: JSON, headers: [String: String] = [:]) throws -> TestResponse {
        try send("POST", "/v1/transactions", json: body, headers: headers)
    }
}

/// Section 15 through HTTP: the body, the answer, refusals with their index, the id as the
/// idempotency key, scoped tokens, the limit, and a restart of a durable server.
@Suite("Transactions API")
struct TransactionAPITests {
    static let transfer: JSON = [
        "id": "tx-1",
        "expect": [["object": "a", "where": [["balance", ">=", 10]]], ["object": "receipt", "exists": false]],
        "operations": [
            ["op": "set", "object": "a", "keyPath": "balance", "value": 90],
            ["op": "patch", "object": "b", "values": ["balance": 110]],
            ["op": "create", "id": "receipt", "values": ["amount": 10, "lines": []]],
            [
                "op": "mutate", "object": "receipt", "keyPath": "lines", "kind": "insertion", "indexes": [0],
                "values": ["x"],
            ],
            ["op": "post", "name": "Moved", "userInfo": ["amount": 10]],
            ["op": "notify", "object": "a", "keyPaths": ["balance"]],
            ["op": "delete", "object": "c"],
        ],
    ]

    static func accounts(_ client: TestClient) throws {
        for id in ["a", "b", "c"] { try client.createObject(id, values: ["balance": 100]) }
    }

    @Test("a transaction answers its revision, its id and one result per operation; every change has the revision")
    func answer() throws {
        try withServer { server, client in
            try Self.accounts(client)
            let observer = try client.createObserver()
            _ = try client.observe(observer, "a", "balance")
            let stream = try server.stream(observer)
            let response = try client.transaction(Self.transfer)
            #expect(response.status == 200, "\(response.text)")
            guard case .int(let revision) = response["revision"] else { throw TestClientError(response.text) }
            #expect(response["id"] == "tx-1")
            guard case .array(let results) = response["results"], results.count == 7 else {
                throw TestClientError(response.text)
            }
            guard case .object(let created) = results[2] else { throw TestClientError(response.text) }
            #expect(created["id"] == "receipt" && created["revision"] == .int(revision))
            #expect(results[4] == ["delivered": 0] && results[0] == [:] && results[6] == [:])
            #expect(try client.get("/v1/objects/receipt")["values"] == ["amount": 10, "lines": ["x"]])
            #expect(try client.get("/v1/objects/c").status == 404)
            let record = try stream.next()
            #expect(record?["old"] == 100 && record?["new"] == 90 && record?["tx"] == "tx-1")
            #expect(record?["revision"] == .int(revision))
            #expect(try stream.next(timeout: 0.3) == nil, "set and notify of one registration: one record")
        }
    }

    @Test("refusals: the operation's status and code with its index, the expect's with its index; nothing changes")
    func refusals() throws {
        try withServer(configure: { $0.maxTransactionOps = 3 }) { _, client in
            try Self.accounts(client)
            let set: JSON = ["op": "set", "object": "a", "keyPath": "balance", "value": 1]
            let cases: [(JSON, Int, String, String)] = [
                (["operations": [set, ["op": "sett", "object": "a"]]], 400, "invalidRequest", "operation"),
                (
                    ["operations": [set, ["op": "set", "object": "a", "keyPath": "x", "valeu": 1]]], 400,
                    "invalidRequest", "operation"
                ),
                (
                    ["operations": [set, ["op": "set", "object": "zz", "keyPath": "x", "value": 1]]], 404, "notFound",
                    "operation"
                ),
                (["operations": [set, ["op": "create", "id": "b"]]], 409, "conflict", "operation"),
                (
                    ["operations": [set, ["op": "set", "object": "b", "keyPath": "x", "value": 1, "ifRevision": 99]]],
                    412,
                    "revisionMismatch", "operation"
                ),
                (
                    ["operations": [set, ["op": "post", "name": "N", "posting": "asap"]]], 400, "invalidRequest",
                    "operation"
                ),
                (
                    ["operations": [set], "expect": [["object": "a", "exists": false]]], 412, "conditionFailed",
                    "expect"
                ),
                (
                    ["operations": [set], "expect": [["object": "a", "ifRevision": 99]]], 412, "revisionMismatch",
                    "expect"
                ),
                (["operations": [set], "expect": [["object": "a"]]], 400, "invalidRequest", "expect"),
                (["operations": [set, set, set, set]], 429, "limitExceeded", "limit"),
                (["operations": []], 400, "invalidRequest", "field"),
                (["operations": [set], "id": "not an id"], 400, "invalidRequest", "field"),
            ]
            for (body, status, code, detail) in cases {
                let refused = try expectRefused(client, status, code, readBack: "/v1/objects/a") {
                    try client.transaction(body)
                }
                #expect(refused.errorDetails[detail] != nil, "\(refused.text)")
            }
        }
    }

    @Test("the id is the key: a repeat answers the first answer, another body is 409, another caller's id is its own")
    func idempotency() throws {
        try withServer { _, client in
            try Self.accounts(client)
            let first = try client.transaction(Self.transfer)
            let revision = try currentRevision(client)
            let again = try client.transaction(Self.transfer)
            #expect(again.status == 200 && again.body == first.body && again.headers["idempotent-replayed"] == "true")
            #expect(try currentRevision(client) == revision)
            try expectRefused(client, 409, "idempotencyKeyReused") {
                try client.transaction(["id": "tx-1", "operations": [["op": "delete", "object": "a"]]])
            }
            try expectRefused(client, 400, "invalidRequest") {
                try client.transaction(Self.transfer, headers: ["Idempotency-Key": "other"])
            }
        }
    }

    @Test("a scoped token may send transactions; an operation outside its scopes is 403 with its index")
    func scoped() throws {
        try withServer { _, client in
            try Self.accounts(client)
            let (_, scoped) = try ScopedTokenTests.token(
                client,
                ["scopes": [["allow": ["read", "write"], "ids": "a"], ["allow": ["read", "write"], "ids": "b"]]])
            let move: JSON = [
                "operations": [
                    ["op": "set", "object": "a", "keyPath": "balance", "value": 1],
                    ["op": "set", "object": "c", "keyPath": "balance", "value": 1],
                ]
            ]
            let refused = try expectRefused(client, 403, "forbidden", readBack: "/v1/objects/a") {
                try client.transaction(move, headers: scoped)
            }
            #expect(refused.errorDetails["operation"] == 1)
            let allowed: JSON = ["operations": [["op": "set", "object": "b", "keyPath": "balance", "value": 5]]]
            #expect(try client.transaction(allowed, headers: scoped).status == 200)
        }
    }

    @Test("a durable server keeps a transaction whole across a restart")
    func durable() throws {
        let directory = try TemporaryDirectory()
        var revision = 0
        try withServer(configure: { $0.dataDir = directory.path }) { _, client in
            try Self.accounts(client)
            #expect(try client.transaction(Self.transfer).status == 200)
            revision = try currentRevision(client)
        }
        let saved = revision
        try withServer(configure: { $0.dataDir = directory.path }) { _, client in
            let (current, a, receipt) = (
                try currentRevision(client), try client.get("/v1/objects/a"), try client.get("/v1/objects/receipt")
            )
            #expect(current == saved && a["values"] == ["balance": 90] && receipt["revision"] == .int(saved))
            let gone = try client.get("/v1/objects/c")
            let repeated = try client.transaction(Self.transfer)
            #expect(gone.status == 404 && repeated.headers["idempotent-replayed"] == "true")
        }
    }
}
