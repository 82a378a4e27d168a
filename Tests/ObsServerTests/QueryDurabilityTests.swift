import Foundation
import Testing

@testable import ObsServer
@testable import ObservationCore

/// Section 12 with `--data-dir`: queries, their windows and their event ids survive restarts.
@Suite("Queries over HTTP: durability")
struct QueryDurabilityTests {
    @Test("queries survive a restart of a durable server (twice: from the command log, then from a checkpoint)")
    func durable() throws {
        let directory = try TemporaryDirectory()
        var observer = ""
        var query = ""
        var last = 0
        try withServer(configure: {
            $0.dataDir = directory.path; $0.checkpointCommands = 1_000
        }) { server, client in
            try QueryAPITests.populate(client)
            observer = try client.createObserver(["lease": 600])
            query = try QueryAPITests.register(
                client, observer,
                [
                    "class": "Order", "where": [["customer.country", "==", "FR"]], "orderBy": [["total", "desc"]],
                    "limit": 2, "select": ["total"], "options": ["new", "old"], "context": "ctx",
                ])
            let stream = try server.stream(observer)
            try client.set("o1", "total", 99)
            last = try #require(try stream.next()?.id)
        }
        for round in 0..<2 {
            try withServer(configure: {
                $0.dataDir = directory.path; $0.checkpointCommands = round == 0 ? 1_000 : 1
            }) { server, client in
                let window = try client.get("/v1/observers/\(observer)/queries/\(query)")
                #expect(
                    window["ids"] == (round == 0 ? ["o1", "o5"] : ["o3", "o1"]) && window["context"] == "ctx",
                    "\(window.text)")
                let stream = try server.stream(observer, headers: ["Last-Event-ID": "\(last)"])
                try client.set(round == 0 ? "o3" : "o1", "total", round == 0 ? 100 : 5)  // each changes the window
                let next = try #require(try stream.next())
                #expect(
                    next.id == last + 1 && next.name == "query" && next["query"] == .string(query)
                        && next["context"] == "ctx")
                last = next.id ?? 0
            }
        }
    }
}
