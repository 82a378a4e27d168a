import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("Durability: the data directory")
struct DurabilityTests {
    @Test("state and event ids survive a restart; a resume from before it gets reset")
    func restart() throws {
        let directory = try TemporaryDirectory()
        var observer = ""
        var lastEventID = 0
        try withServer(configure: { $0.dataDir = directory.path }) { server, client in
            try client.defineClass(
                "Person", ["name": ["type": "string"], "friend": ["type": "ref", "class": "Person"]])
            try client.createObject("a", className: "Person", values: ["name": "Ann"])
            try client.createObject("b", className: "Person", values: ["friend": ["$ref": "a"]])
            observer = try client.createObserver(["lease": 600])
            try client.observe(observer, "b", "friend.name")
            let stream = try server.stream(observer)
            for name in ["A1", "A2", "A3"] { try client.set("a", "name", .string(name)) }
            lastEventID = try stream.events(3).last?.id ?? 0
            stream.close()
        }
        #expect(lastEventID == 3)
        try withServer(configure: { $0.dataDir = directory.path }) { server, client in
            #expect(try client.value("a", "name") == "A3")
            #expect(try client.value("b", "friend.name") == "A3")
            let listed = try client.get("/v1/observers/\(observer)")
            #expect(listed["lastEventId"] == .int(lastEventID))
            guard case .array(let observations) = listed["observations"], case .object(let first)? = observations.first
            else {
                Issue.record("no observations after the restart")
                return
            }
            #expect(first["keyPath"] == "friend.name")
            let stream = try server.stream(observer, headers: ["Last-Event-ID": "\(lastEventID)"])
            try client.set("a", "name", "A4")
            let next = try stream.next()
            #expect(next?.id == lastEventID + 1 && next?["new"] == "A4", "ids continue, never reused")
            let early = try server.stream(observer, headers: ["Last-Event-ID": "1"])
            #expect(try early.next()?.name == "reset")
        }
    }

    @Test("a commit that fails is retried with later changes; its answer waits until it is durable")
    func failedCommitsAreRetried() throws {
        let directory = try TemporaryDirectory()
        // Longer than this test holds the lock: the write waits and is never rolled back.
        let server = try TestServer {
            $0.dataDir = directory.path
            $0.commitTimeout = .seconds(60)
        }
        defer { server.stop() }
        let client = server.client()
        defer { client.close() }
        try client.createObject("a", values: ["n": 0])
        let observer = try client.createObserver()
        // Another connection takes SQLite's write lock: the committer's transactions fail
        // (SQLITE_BUSY after its 1 s busy timeout), as they would on a full or failing disk.
        let blocker = try SQLiteDatabase(path: directory.path + "/" + StoreDatabase.fileName)
        try blocker.execute("BEGIN IMMEDIATE")
        let answered = Locked<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        let port = server.port
        Thread.detachNewThread {
            let writer = TestClient(port: port)
            let status = try? writer.send("PUT", "/v1/objects/a/values/n", json: ["value": 1]).status
            answered.withLock { $0 = status ?? -1 }
            writer.close()
            done.signal()
        }
        func aCommitFailed() throws -> Bool {
            !(try client.get("/metrics").text.contains("\nobs_commit_failures_total 0\n"))
        }
        let deadline = ContinuousClock.now + .seconds(10)
        while try !aCommitFailed(), ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(try aCommitFailed())
        #expect(answered.withLock { $0 } == nil, "no answer before the change is durable")
        // Meanwhile new writes are refused at once (503, Retry-After), changing nothing;
        // reads, streams and keepalives go on.
        let refused = try expectRefused(client, 503, "unavailable") {
            try client.send("PUT", "/v1/objects/a/values/n", json: ["value": 2])
        }
        #expect(Int(refused.headers["retry-after"] ?? "") ?? 0 >= 1)
        #expect(try client.get("/v1/stats")["writable"] == false)
        #expect(try gauge(client, "obs_writable") == 0)
        #expect(try client.get("/v1/objects/a").status == 200)
        #expect(try client.send("HEAD", "/v1/objects/a").status == 200, "a HEAD is a read: it never waits")
        #expect(try client.send("POST", "/v1/observers/\(observer)/keepalive").status == 200)
        let stream = try server.stream(observer)
        #expect(stream.status == 200)
        try blocker.execute("ROLLBACK")
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(answered.withLock { $0 } == 200)
        #expect(try client.get("/v1/stats")["writable"] == true)
        try client.set("a", "n", 3)
        let image = try StoreDatabase(directory: directory.path).load()
        #expect(try Store(restoring: image).as(.admin).value(of: "a", at: "n").value == 3)
    }

    @Test("stopping while commits fail closes the held answers unanswered, and nothing unanswered is stored")
    func stopDuringAnOutage() throws {
        let directory = try TemporaryDirectory()
        // The stop comes before the commit timeout would answer the held write.
        let server = try TestServer {
            $0.dataDir = directory.path
            $0.commitTimeout = .seconds(60)
        }
        let client = server.client()
        try client.createObject("a", values: ["n": 0])
        let blocker = try SQLiteDatabase(path: directory.path + "/" + StoreDatabase.fileName)
        try blocker.execute("BEGIN IMMEDIATE")
        let answered = Locked<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        let port = server.port
        Thread.detachNewThread {
            let writer = TestClient(port: port)
            do {
                answered.withLock {
                    $0 = "\((try? writer.send("PUT", "/v1/objects/a/values/n", json: ["value": 1]))?.status ?? 0)"
                }
            }
            writer.close()
            done.signal()
        }
        try waitUntil(within: .seconds(10)) { try client.get("/v1/stats")["writable"] == false }
        client.close()
        let started = ContinuousClock.now
        server.stop()  // libmicrohttpd aborts the process if stopped with suspended connections
        #expect(ContinuousClock.now - started < .seconds(10))
        #expect(done.wait(timeout: .now() + 5) == .success)
        #expect(answered.withLock { $0 } == "0", "the held write must not be answered: its durability is unknown")
        try blocker.execute("ROLLBACK")
        let image = try StoreDatabase(directory: directory.path).load()
        #expect(try Store(restoring: image).as(.admin).value(of: "a", at: "n").value == 0)
    }

    @Test("every answered write is on disk when the answer arrives")
    func answeredMeansDurable() throws {
        let directory = try TemporaryDirectory()
        let server = try TestServer { $0.dataDir = directory.path }
        let client = server.client()
        try client.createObject("a", values: ["n": 0])
        for value in 1...50 { try client.set("a", "n", .int(value)) }
        client.close()
        // Read the database while the server still runs: no shutdown flush has helped.
        let image = try StoreDatabase(directory: directory.path).load()
        let restored = try Store(restoring: image)
        #expect(try restored.as(.admin).value(of: "a", at: "n").value == 50)
        server.stop()
    }

    @Test("a damaged database, a data dir in use or one that cannot be created is a clear error at start")
    func badDataDirectories() throws {
        let directory = try TemporaryDirectory()
        try Array("this is not a database, it is plain text".utf8).withUnsafeBytes {
            try Data($0).write(to: URL(fileURLWithPath: directory.path + "/" + StoreDatabase.fileName))
        }
        #expect(startFailure(dataDir: directory.path)?.contains("not a usable ObsServer database") == true)

        let shared = try TemporaryDirectory()
        let first = try TestServer { $0.dataDir = shared.path }
        #expect(startFailure(dataDir: shared.path)?.contains("in use by another obs-server") == true)
        first.stop()

        let file = directory.path + "/plain-file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        #expect(startFailure(dataDir: file + "/data")?.contains("cannot create the data directory") == true)
    }

    @Test("a stored row the server cannot read names the row")
    func damagedRow() throws {
        let directory = try TemporaryDirectory()
        try withServer(configure: { $0.dataDir = directory.path }) { _, client in
            try client.createObject("a", values: ["n": 1])
        }
        let database = try SQLiteDatabase(path: directory.path + "/" + StoreDatabase.fileName)
        try database.execute("UPDATE entities SET document = '{\"values\": 1}' WHERE id = 'a'")
        #expect(startFailure(dataDir: directory.path)?.contains("stored object 'a' is unreadable") == true)
    }

    /// The message of the error that keeps a server from starting on `dataDir` (nil: it started).
    private func startFailure(dataDir: String) -> String? {
        var config = ServerConfig()
        config.port = 0
        config.dataDir = dataDir
        do {
            let server = try Server(config: config, logger: testLogger())
            server.stop()
            return nil
        } catch {
            return "\(error)"
        }
    }
}
