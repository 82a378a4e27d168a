import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// What one stress worker saw.
private struct WorkerLog: Sendable {
    var revisions: [Int] = []
    var lastWritten = 0
    var insertions = 0
    var removals = 0
    var failures: [String] = []
}

@Suite("Concurrency stress")
struct StressTests {
    static let threads = 8
    static let requestsPerThread = 2000

    @Test("8 threads × 2,000 mixed requests keep every invariant")
    func mixedLoad() throws {
        let server = try TestServer()
        defer { server.stop() }
        let setup = server.client()
        try setup.createObject("shared", values: ["log": []])
        for worker in 0..<Self.threads { try setup.createObject("own-\(worker)", values: ["n": 0, "a": 0, "b": 0]) }
        let startRevision = try currentRevision(setup)

        let port = server.port
        let logs = Locked<[WorkerLog]>([])
        let group = DispatchGroup()
        for worker in 0..<Self.threads {
            group.enter()
            Thread {
                defer { group.leave() }
                let log = Self.work(worker, port: port)
                logs.withLock { $0.append(log) }
            }.start()
        }
        #expect(group.wait(timeout: .now() + 300) == .success, "stress workers did not finish in time")
        let results = logs.withLock { $0 }

        for log in results { #expect(log.failures.isEmpty, "\(log.failures.prefix(5))") }
        // Revisions: strictly increasing per client, distinct across clients, none lost.
        for log in results { #expect(zip(log.revisions, log.revisions.dropFirst()).allSatisfy { $0 < $1 }) }
        let all = results.flatMap(\.revisions)
        #expect(Set(all).count == all.count, "two writes shared a revision")
        let finalRevision = try currentRevision(setup)
        #expect(
            finalRevision == startRevision + all.count, "a successful write took no revision, or a failed one took one")
        #expect(all.max() == finalRevision)
        // No lost write: each worker's own object holds its last write, and PATCHed pairs stayed equal.
        for worker in 0..<Self.threads {
            let object = try setup.get("/v1/objects/own-\(worker)")
            guard case .object(let values) = object["values"] else { Issue.record("no values"); continue }
            #expect(values["a"] == values["b"], "PATCH was not atomic for worker \(worker)")
        }
        let written = results.map(\.lastWritten).sorted()
        var stored: [Int] = []
        for worker in 0..<Self.threads {
            if case .int(let value) = try setup.value("own-\(worker)", "n") { stored.append(value) }
        }
        #expect(stored.sorted() == written)
        // Array length: every acknowledged insertion and removal is accounted for.
        let inserted = results.map(\.insertions).reduce(0, +)
        let removed = results.map(\.removals).reduce(0, +)
        #expect(try setup.value("shared", "log.@count") == .int(inserted - removed))
    }

    /// One worker's 2,000 requests: PUT own key, PATCH own pair, insert/remove on the shared array, reads.
    private static func work(_ worker: Int, port: UInt16) -> WorkerLog {
        let client = TestClient(port: port)
        defer { client.close() }
        var log = WorkerLog()
        var generator = SystemRandomNumberGenerator()
        func record(_ response: TestResponse, _ what: String) -> Bool {
            guard response.status == 200, case .int(let revision) = response["revision"] else {
                if log.failures.count < 10 { log.failures.append("\(what): \(response.status) \(response.text)") }
                return false
            }
            log.revisions.append(revision)
            return true
        }
        do {
            for step in 1...requestsPerThread {
                switch Int.random(in: 0..<10, using: &generator) {
                case 0..<3:
                    if record(
                        try client.send("PUT", "/v1/objects/own-\(worker)/values/n", json: ["value": .int(step)]), "put"
                    ) {
                        log.lastWritten = step
                    }
                case 3..<5:
                    _ = record(
                        try client.send(
                            "PATCH", "/v1/objects/own-\(worker)", json: ["values": ["a": .int(step), "b": .int(step)]]),
                        "patch")
                case 5..<7:
                    let body: JSON = ["kind": "insertion", "indexes": [0], "values": [.string("\(worker)-\(step)")]]
                    if record(try client.send("POST", "/v1/objects/shared/values/log/mutations", json: body), "insert")
                    {
                        log.insertions += 1
                    }
                case 7:
                    let response = try client.send(
                        "POST", "/v1/objects/shared/values/log/mutations", json: ["kind": "removal", "indexes": [0]])
                    if response.status == 200 {
                        _ = record(response, "remove")
                        log.removals += 1
                    } else if response.errorCode != "indexOutOfRange" {
                        log.failures.append("remove: \(response.status) \(response.text)")
                    }
                default:
                    let response = try client.get("/v1/objects/own-\(worker)/values/n")
                    if response["value"] != .int(log.lastWritten) {
                        log.failures.append("read-your-writes: expected \(log.lastWritten), read \(response.text)")
                    }
                }
            }
        } catch {
            log.failures.append("transport: \(error)")
        }
        return log
    }
}
