import ObservationCore
import Testing

@testable import ObsServer

@Suite("Objects API")
struct ObjectAPITests {
    @Test("POST creates with a given or generated id; GET returns the contract's fields")
    func create() throws {
        try withServer { _, client in
            let given = try client.createObject("acct-1", values: ["balance": 100, "tags": ["a"]])
            #expect(given["id"] == "acct-1")
            #expect(given.headers["location"] == "/v1/objects/acct-1")
            let generated = try client.send("POST", "/v1/objects", json: [:])
            #expect(generated.status == 201)
            guard case .string(let id) = generated["id"] else { Issue.record("no id"); return }
            #expect(id.hasPrefix("obj_"))
            let read = try client.get("/v1/objects/acct-1")
            #expect(read.status == 200)
            #expect(read["class"] == .null)
            #expect(read["values"] == ["balance": 100, "tags": ["a"]])
            #expect(read["retainedBy"] == [])
            guard case .string(let createdAt) = read["createdAt"], case .int(let revision) = read["revision"] else {
                Issue.record("missing fields")
                return
            }
            #expect(createdAt.hasSuffix("Z") && createdAt.count == 24)
            #expect(revision == 1)
        }
    }

    @Test("creating an existing id answers 409 and keeps the first")
    func duplicate() throws {
        try withServer { _, client in
            try client.createObject("a", values: ["x": 1])
            try expectRefused(client, 409, "conflict", readBack: "/v1/objects/a") {
                try client.send("POST", "/v1/objects", json: ["id": "a", "values": ["x": 2]])
            }
        }
    }

    @Test("bad creations answer 400/404 and create nothing", arguments: badCreationsCases)
    func badCreate(body: JSON, status: Int, code: String) throws {
        try withServer { _, client in
            try client.createObject("a")
            try expectRefused(client, status, code) { try client.send("POST", "/v1/objects", json: body) }
            #expect(try client.get("/v1/objects/x").status == 404)
        }
    }

    @Test("objects of a class accept only its keys, with the declared types")
    func classChecks() throws {
        try withServer { _, client in
            try client.defineClass(
                "Account",
                [
                    "balance": ["type": "integer"], "owner": ["type": "ref", "class": "Person"],
                    "label": ["type": "string"],
                ])
            try client.defineClass("Person", ["name": ["type": "string"]])
            try client.createObject("p1", className: "Person", values: ["name": "Ada"])
            try client.createObject("x1")
            try client.createObject("a1", className: "Account", values: ["balance": 5, "owner": ["$ref": "p1"]])
            let typo = try expectRefused(client, 400, "unknownKeyPath", readBack: "/v1/objects/a1") {
                try client.send("PUT", "/v1/objects/a1/values/balanse", json: ["value": 1])
            }
            #expect(typo.text.contains("did you mean 'balance'"))
            try expectRefused(client, 400, "typeMismatch", readBack: "/v1/objects/a1") {
                try client.send("PUT", "/v1/objects/a1/values/balance", json: ["value": 1.5])
            }
            try expectRefused(client, 400, "typeMismatch", readBack: "/v1/objects/a1") {
                try client.send("PUT", "/v1/objects/a1/values/label", json: ["value": 3])
            }
            try expectRefused(client, 400, "typeMismatch", readBack: "/v1/objects/a1") {
                try client.send("PUT", "/v1/objects/a1/values/owner", json: ["value": ["$ref": "x1"]])
            }
            try expectRefused(client, 400, "unknownKeyPath") {
                try client.send("POST", "/v1/objects", json: ["id": "a2", "class": "Account", "values": ["nope": 1]])
            }
            #expect(try client.send("PUT", "/v1/objects/a1/values/balance", json: ["value": nil]).status == 200)
            #expect(try client.send("PUT", "/v1/objects/a1/values/balance", json: ["value": 2.0]).status == 200)
            let read = try client.get("/v1/objects/a1")
            #expect(read["values"] == ["balance": 2, "owner": ["$ref": "p1"], "label": nil])
        }
    }

    @Test("listing pages in id order with limit, after and next; filters by class")
    func paging() throws {
        try withServer { _, client in
            try client.defineClass("C", [:])
            for index in (0..<25).reversed() {
                try client.createObject(String(format: "o%02d", index), className: index % 5 == 0 ? "C" : nil)
            }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let path = "/v1/objects?limit=10" + (cursor.map { "&after=\($0)" } ?? "")
                let page = try client.get(path)
                #expect(page.status == 200)
                guard case .array(let objects) = page["objects"] else { break }
                for case .object(let object) in objects { if case .string(let id)? = object["id"] { seen.append(id) } }
                if case .string(let next) = page["next"] { cursor = next } else { cursor = nil }
            } while cursor != nil
            #expect(seen == (0..<25).map { String(format: "o%02d", $0) })
            let classed = try client.get("/v1/objects?class=C")
            guard case .array(let objects) = classed["objects"] else { Issue.record("no objects"); return }
            #expect(objects.count == 5)
            #expect(classed["next"] == .null)
            try expectRefused(client, 400, "invalidRequest") { try client.get("/v1/objects?limit=0") }
            try expectRefused(client, 400, "invalidRequest") { try client.get("/v1/objects?limit=abc") }
            try expectRefused(client, 404, "notFound") { try client.get("/v1/objects?class=Nope") }
        }
    }

    @Test("PATCH changes several keys under one revision, or none of them")
    func patch() throws {
        try withServer { _, client in
            try client.defineClass("P", ["a": ["type": "number"], "b": ["type": "string"]])
            try client.createObject("p", className: "P", values: ["a": 1, "b": "x"])
            let patched = try client.send("PATCH", "/v1/objects/p", json: ["values": ["a": 2, "b": "y"]])
            #expect(patched.status == 200)
            let object = try client.get("/v1/objects/p")
            #expect(object["revision"] == patched["revision"])
            #expect(object["values"] == ["a": 2, "b": "y"])
            try expectRefused(client, 400, "typeMismatch", readBack: "/v1/objects/p") {
                try client.send("PATCH", "/v1/objects/p", json: ["values": ["a": 3, "b": 4]])
            }
            try expectRefused(client, 400, "unknownKeyPath", readBack: "/v1/objects/p") {
                try client.send("PATCH", "/v1/objects/p", json: ["values": ["a": 3, "c": 4]])
            }
            try expectRefused(client, 400, "invalidKeyPath", readBack: "/v1/objects/p") {
                try client.send("PATCH", "/v1/objects/p", json: ["values": ["a.b": 3]])
            }
            try expectRefused(client, 400, "invalidRequest", readBack: "/v1/objects/p") {
                try client.send("PATCH", "/v1/objects/p", json: ["a": 3])
            }
            try expectRefused(client, 404, "notFound") {
                try client.send("PATCH", "/v1/objects/none", json: ["values": ["a": 3]])
            }
        }
    }

    @Test("ifRevision guards writes: a stale revision answers 412 revisionMismatch")
    func ifRevision() throws {
        try withServer { _, client in
            let created = try client.createObject("c", values: ["n": 1, "list": [1]])
            guard case .int(let revision) = created["revision"] else { Issue.record("no revision"); return }
            let first = try client.send(
                "PUT", "/v1/objects/c/values/n", json: ["value": 2, "ifRevision": .int(revision)])
            #expect(first.status == 200)
            try expectRefused(client, 412, "revisionMismatch", readBack: "/v1/objects/c") {
                try client.send("PUT", "/v1/objects/c/values/n", json: ["value": 3, "ifRevision": .int(revision)])
            }
            try expectRefused(client, 412, "revisionMismatch", readBack: "/v1/objects/c") {
                try client.send("PATCH", "/v1/objects/c", json: ["values": ["n": 3], "ifRevision": .int(revision)])
            }
            try expectRefused(client, 412, "revisionMismatch", readBack: "/v1/objects/c") {
                try client.send(
                    "POST", "/v1/objects/c/values/list/mutations",
                    json: ["kind": "removal", "indexes": [0], "ifRevision": .int(revision)])
            }
            #expect(
                try client.send("PATCH", "/v1/objects/c", json: ["values": ["n": 4], "ifRevision": first["revision"]])
                    .status == 200)
        }
    }

    @Test("DELETE removes the object; a second DELETE answers 404")
    func delete() throws {
        try withServer { _, client in
            try client.createObject("d")
            #expect(try client.delete("/v1/objects/d").status == 204)
            try expectRefused(client, 404, "notFound") { try client.get("/v1/objects/d") }
            try expectRefused(client, 404, "notFound") { try client.delete("/v1/objects/d") }
        }
    }

    @Test("past --max-objects, creation answers 429 limitExceeded")
    func objectLimit() throws {
        try withServer(configure: { $0.maxObjects = 3 }) { _, client in
            for index in 0..<3 { try client.createObject("o\(index)") }
            try expectRefused(client, 429, "limitExceeded") {
                try client.send("POST", "/v1/objects", json: ["id": "o3"])
            }
            #expect(try client.delete("/v1/objects/o0").status == 204)
            try client.createObject("o3")
        }
    }

    @Test("every successful change takes the next global revision; reads take none")
    func revisions() throws {
        try withServer { _, client in
            var revisions: [Int] = []
            func record(_ response: TestResponse) {
                if case .int(let revision) = response["revision"] { revisions.append(revision) }
            }
            record(try client.createObject("r", values: ["a": 1, "l": []]))
            record(try client.send("PUT", "/v1/objects/r/values/a", json: ["value": 2]))
            _ = try client.get("/v1/objects/r")
            record(try client.send("PATCH", "/v1/objects/r", json: ["values": ["a": 3]]))
            record(
                try client.send(
                    "POST", "/v1/objects/r/values/l/mutations",
                    json: ["kind": "insertion", "indexes": [0], "values": [1]]))
            record(try client.send("POST", "/v1/objects/r/notify", json: ["keyPaths": ["a"]]))
            #expect(revisions == [1, 2, 3, 4, 5])
            #expect(try currentRevision(client) == 5)
        }
    }
}

private let badCreationsCases: [(JSON, Int, String)] = [
    (["id": "has space"], 400, "invalidName"),
    (["id": .string(String(repeating: "x", count: 129))], 400, "invalidName"),
    (["id": 7], 400, "typeMismatch"),
    (["id": "x", "class": "Nope"], 404, "notFound"),
    (["id": "x", "values": ["bad-key": 1]], 400, "invalidKeyPath"),
    (["id": "x", "values": ["r": ["$ref": "missing"]]], 404, "notFound"),
    (["id": "x", "values": ["r": ["$ref": "a", "other": 1]]], 400, "invalidRequest"),
    (["id": "x", "values": 3], 400, "typeMismatch"),
    ([1, 2], 400, "invalidRequest"),
]
