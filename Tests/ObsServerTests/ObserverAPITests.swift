import Foundation
import ObservationCore
import Testing

@testable import ObsServer

@Suite("Observers and registrations API")
struct ObserverAPITests {
    @Test("create answers the observer with its token and defaults; list and get show it")
    func create() throws {
        try withServer { _, client in
            let created = try client.send("POST", "/v1/observers", json: ["name": "dash"])
            #expect(created.status == 201)
            #expect(created["name"] == "dash")
            #expect(created["lease"] == 60)
            #expect(created["replay"] == 1024)
            #expect(created["retainObserved"] == false)
            guard case .string(let token) = created["token"], case .string(let id) = created["id"] else {
                Issue.record("no token or id")
                return
            }
            #expect(token.count >= 32 && id.hasPrefix("obs_"))
            let list = try client.get("/v1/observers")
            guard case .array(let observers) = list["observers"], case .object(let first)? = observers.first else {
                Issue.record("no list")
                return
            }
            for field in [
                "id", "name", "connected", "streams", "expiresAt", "observations", "subscriptions", "lastEventId",
                "backlog", "dropped",
            ] {
                #expect(first[field] != nil, "missing \(field)")
            }
            #expect(first["token"] == nil, "the token is shown once")
            let single = try client.get("/v1/observers/\(id)")
            #expect(single["observations"] == [])
        }
    }

    @Test("bad observer settings answer 400 and create nothing", arguments: badSettingsCases)
    func badSettings(body: JSON, code: String) throws {
        try withServer { _, client in
            try expectRefused(client, 400, code) { try client.send("POST", "/v1/observers", json: body) }
            #expect(try client.get("/v1/observers")["observers"] == [])
        }
    }

    @Test("DELETE removes the observer and its registrations; keepalive answers expiresAt")
    func deleteAndKeepalive() throws {
        try withServer { _, client in
            try client.createObject("a")
            let id = try client.createObserver()
            try client.observe(id, "a", "x")
            let keepalive = try client.send("POST", "/v1/observers/\(id)/keepalive")
            #expect(keepalive.status == 200)
            guard case .string = keepalive["expiresAt"] else { Issue.record("no expiresAt"); return }
            #expect(try client.delete("/v1/observers/\(id)").status == 204)
            try expectRefused(client, 404, "notFound") { try client.get("/v1/observers/\(id)") }
            try expectRefused(client, 404, "notFound") { try client.delete("/v1/observers/\(id)") }
            try expectRefused(client, 404, "notFound") { try client.send("POST", "/v1/observers/\(id)/keepalive") }
            #expect(try client.get("/v1/stats")["observations"] == 0)
        }
    }

    @Test("registering the same (object, key path) again answers 200 deduplicated with the first registration")
    func dedup() throws {
        try withServer { _, client in
            try client.createObject("a")
            let id = try client.createObserver()
            let path = "/v1/observers/\(id)/observations"
            let first = try client.send("POST", path, json: ["object": "a", "keyPath": "x", "options": ["new"]])
            #expect(first.status == 201)
            let revision = try currentRevision(client)
            let second = try client.send("POST", path, json: ["object": "a", "keyPath": "x", "options": ["old"]])
            #expect(second.status == 200)
            #expect(second["deduplicated"] == true)
            guard case .array(let a) = first["observations"], case .array(let b) = second["observations"],
                case .object(let firstReg)? = a.first, case .object(let secondReg)? = b.first
            else { Issue.record("bad answers"); return }
            #expect(firstReg["id"] == secondReg["id"])
            #expect(secondReg["options"] == ["new"])
            #expect(try currentRevision(client) == revision, "a deduplicated registration takes no revision")
            let several = try client.send("POST", path, json: ["object": "a", "keyPaths": ["x", "y", "z"]])
            #expect(several.status == 201)
            guard case .array(let list) = several["observations"] else { Issue.record("no list"); return }
            #expect(list.count == 3)
            let other = try client.createObserver()
            #expect(
                try client.send("POST", "/v1/observers/\(other)/observations", json: ["object": "a", "keyPath": "x"])
                    .status == 201)
        }
    }

    @Test("bad registrations answer 400/404 and register nothing", arguments: badRegistrationCases)
    func badRegistrations(body: JSON, status: Int, code: String) throws {
        try withServer { _, client in
            try client.defineClass("P", ["name": ["type": "string"]])
            try client.createObject("a", className: "P")
            let id = try client.createObserver()
            try expectRefused(client, status, code) {
                try client.send("POST", "/v1/observers/\(id)/observations", json: body)
            }
            #expect(try client.get("/v1/observers/\(id)/observations")["observations"] == [])
        }
        try withServer { _, client in
            try expectRefused(client, 404, "notFound") {
                try client.send("POST", "/v1/observers/obs_nope/observations", json: ["object": "a", "keyPath": "x"])
            }
        }
    }

    @Test("unobserve by id, by object and key path, by object, and all; nothing registered is 404")
    func unobserve() throws {
        try withServer { _, client in
            for object in ["a", "b"] { try client.createObject(object) }
            let id = try client.createObserver()
            let first = try client.observe(id, "a", "x")
            try client.observe(id, "a", "y")
            try client.observe(id, "a", "z")
            try client.observe(id, "b", "x")
            try client.observe(id, "b", "y")
            func count() throws -> Int {
                guard case .array(let list) = try client.get("/v1/observers/\(id)/observations")["observations"] else {
                    return -1
                }
                return list.count
            }
            #expect(try client.delete("/v1/observers/\(id)/observations/\(first)").status == 204)
            try expectRefused(client, 404, "notFound") {
                try client.delete("/v1/observers/\(id)/observations/\(first)")
            }
            #expect(try client.delete("/v1/observers/\(id)/observations?object=a&keyPath=y").status == 204)
            try expectRefused(client, 404, "notFound") {
                try client.delete("/v1/observers/\(id)/observations?object=a&keyPath=y")
            }
            #expect(try count() == 3)
            #expect(try client.delete("/v1/observers/\(id)/observations?object=b").status == 204)
            try expectRefused(client, 404, "notFound") {
                try client.delete("/v1/observers/\(id)/observations?object=b")
            }
            #expect(try count() == 1)
            #expect(try client.delete("/v1/observers/\(id)/observations").status == 204)
            #expect(try count() == 0)
        }
    }

    @Test("limits: observers and registrations per observer answer 429; a deduplicated one at the limit answers 200")
    func limits() throws {
        try withServer(configure: {
            $0.maxObservers = 2; $0.maxRegistrationsPerObserver = 2
        }) { _, client in
            try client.createObject("a")
            let id = try client.createObserver()
            _ = try client.createObserver()
            try expectRefused(client, 429, "limitExceeded") { try client.send("POST", "/v1/observers", json: [:]) }
            try client.observe(id, "a", "x")
            try client.observe(id, "a", "y")
            try expectRefused(client, 429, "limitExceeded") {
                try client.send("POST", "/v1/observers/\(id)/observations", json: ["object": "a", "keyPath": "z"])
            }
            #expect(
                try client.send("POST", "/v1/observers/\(id)/observations", json: ["object": "a", "keyPath": "x"])
                    .status == 200)
        }
    }

    @Test("an observer's lease runs out while no stream is connected; a stream holds it")
    func lease() throws {
        try withServer { server, client in
            let expiring = try client.createObserver(["lease": 1])
            let held = try client.createObserver(["lease": 1])
            let admin = try server.stream(nil)
            let stream = try server.stream(held)
            let deadline = Date().addingTimeInterval(5)
            var removed: SSEEvent?
            while removed == nil, Date() < deadline, let event = try admin.next(timeout: 5) {
                if event.name == "observerRemoved" { removed = event }
            }
            #expect(removed?["observer"] == .string(expiring))
            #expect(removed?["reason"] == "expired")
            #expect(try client.get("/v1/observers/\(expiring)").status == 404)
            #expect(try client.get("/v1/observers/\(held)")["connected"] == true)
            stream.close()
            _ = try admin.next(timeout: 3)  // observerRemoved of `held`, once its stream is gone and its lease ran out
            _ = try client.get("/v1/stats")
        }
    }
}

private let badSettingsCases: [(JSON, String)] = [
    (["lease": 0], "invalidRequest"), (["lease": 86401], "invalidRequest"), (["replay": 0], "invalidRequest"),
    (["replay": 100_001], "invalidRequest"), (["name": "bad name"], "invalidName"), (["lease": "60"], "typeMismatch"),
    (["retainObserved": "yes"], "typeMismatch"), (["leese": 5], "invalidRequest"),
]

private let badRegistrationCases: [(JSON, Int, String)] = [
    (["object": "missing", "keyPath": "x"], 404, "notFound"),
    (["object": "a", "keyPath": "nmae"], 400, "unknownKeyPath"),
    (["object": "a", "keyPath": "name..x"], 400, "invalidKeyPath"),
    (["object": "a", "keyPath": "name", "options": ["nwe"]], 400, "invalidRequest"),
    (["object": "a"], 400, "invalidRequest"),
    (["keyPath": "name"], 400, "invalidRequest"),
    (["object": "a", "keyPaths": []], 400, "invalidRequest"),
    (["object": "a", "keyPath": 3], 400, "typeMismatch"),
]
