import Dispatch
import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("Durability: a write that cannot be made durable is answered in bounded time and undone")
struct CommitTimeoutTests {
    @Test("past --commit-timeout the waiting writes get 503, nothing of them remains, and writes come back")
    func rollsBack() throws {
        let directory = try TemporaryDirectory()
        let server = try TestServer {
            $0.dataDir = directory.path
            $0.commitTimeout = .milliseconds(1500)
        }
        defer { server.stop() }
        let client = server.client()
        defer { client.close() }
        try client.createObject("a", values: ["n": 0])
        let observer = try client.createObserver(["lease": 600])
        try client.observe(observer, "a", "n")
        let stream = try server.stream(observer)

        // Another connection takes SQLite's write lock: every commit fails (SQLITE_BUSY).
        let blocker = try SQLiteDatabase(path: directory.path + "/" + StoreDatabase.fileName)
        try blocker.execute("BEGIN IMMEDIATE")
        let port = server.port
        let answers = Locked<[(status: Int, seconds: Double, body: String)]>([])
        let group = DispatchGroup()
        for writer in 1...4 {
            group.enter()
            Thread.detachNewThread {
                let connection = TestClient(port: port)
                let started = ContinuousClock.now
                let answer = try? connection.send(
                    "POST", "/v1/objects", json: ["id": .string("w\(writer)"), "values": ["n": .int(writer)]])
                answers.withLock {
                    $0.append((answer?.status ?? 0, (ContinuousClock.now - started).inSeconds, answer?.text ?? ""))
                }
                connection.close()
                group.leave()
            }
        }
        #expect(group.wait(timeout: .now() + 10) == .success, "every write is answered")
        let all = answers.withLock { $0 }
        #expect(all.count == 4)
        for answer in all {
            // A write applied before the first failure waits for the rollback; one after it is refused at once.
            #expect(answer.status == 503, "\(answer)")
            #expect(answer.seconds < 1.5 + 1, "answered within the timeout (and the test's slack): \(answer)")
            #expect(answer.body.contains("\"unavailable\""))
        }
        #expect(try gauge(client, "obs_commit_rollbacks_total") >= 1)
        // Nothing of the undone writes shows: not in reads, not in the stream, not after it.
        for writer in 1...4 { #expect(try client.get("/v1/objects/w\(writer)").status == 404) }
        #expect(try client.get("/v1/stats")["objects"] == 1)

        try blocker.execute("ROLLBACK")
        try waitUntil(within: .seconds(10)) { try client.get("/v1/stats")["writable"] == true }
        try client.set("a", "n", 5)
        let next = try stream.next()
        #expect(next?.id == 1 && next?["new"] == 5, "the stream goes on: the next event takes the next id")
        let image = try StoreDatabase(directory: directory.path).load()
        let restored = try Store(restoring: image)
        #expect(try restored.as(.admin).value(of: "a", at: "n").value == 5)
        for writer in 1...4 { #expect(throws: CoreError.self) { try restored.as(.admin).object("w\(writer)") } }
    }
}
