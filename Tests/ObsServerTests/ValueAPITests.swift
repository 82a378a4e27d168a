import ObservationCore
import Testing

@testable import ObsServer

@Suite("Values API (KVC)")
struct ValueAPITests {
    /// A department with employees (references), a boss, nested plain JSON, and transactions.
    static func seed(_ client: TestClient) throws {
        try client.defineClass(
            "Employee", ["name": ["type": "string"], "salary": ["type": "number"], "tags": ["type": "array"]])
        try client.defineClass(
            "Dept",
            [
                "title": ["type": "string"],
                "employees": ["type": "array", "items": ["type": "ref", "class": "Employee"]],
                "boss": ["type": "ref", "class": "Employee"],
                "meta": ["type": "object"],
                "totalSalary": ["type": "number", "computed": "employees.@sum.salary"],
                "headline": ["type": "string", "computed": "{title} led by {boss.name}"],
            ])
        try client.createObject(
            "e1", className: "Employee", values: ["name": "Ada", "salary": 100, "tags": ["x", "y"]])
        try client.createObject("e2", className: "Employee", values: ["name": "Alan", "salary": 50, "tags": ["y"]])
        try client.createObject("e3", className: "Employee", values: ["name": "Grace", "salary": 150.5])
        try client.createObject(
            "d", className: "Dept",
            values: [
                "title": "R&D",
                "employees": [["$ref": "e1"], ["$ref": "e2"], ["$ref": "e3"]],
                "boss": ["$ref": "e1"],
                "meta": ["floor": 3, "address": ["city": "Paris"]],
            ])
        try client.createObject(
            "free", values: ["list": [3, 1, 2, 1, nil], "words": ["b", "a"], "text": "hi", "n": nil])
    }

    @Test("key paths read through JSON, references, arrays and operators", arguments: readsCases)
    func reads(object: String, keyPath: String, expected: JSON) throws {
        try withServer { _, client in
            try Self.seed(client)
            let response = try client.get("/v1/objects/\(object)/values/\(keyPath)")
            #expect(response.status == 200, "\(response.text)")
            #expect(response["value"] == expected, "\(keyPath): \(response.text)")
            #expect(response["keyPath"] == .string(keyPath))
        }
    }

    @Test(
        "bad reads answer 400 or 404",
        arguments: [
            ("d", "employees.@count.x", 400, "invalidKeyPath"),
            ("d", "employees.@sum", 400, "invalidKeyPath"),
            ("d", "@count", 400, "invalidKeyPath"),
            ("d", "employees.@median.salary", 400, "invalidKeyPath"),
            ("d", "bos.name", 400, "unknownKeyPath"),
            ("d", "boss.nmae", 400, "unknownKeyPath"),
            ("d", "title.length", 400, "unknownKeyPath"),
            ("d", "title.@count", 400, "notACollection"),
            ("free", "text.@count", 400, "notACollection"),
            ("free", "words.@sum.x", 200, ""),
            ("free", "list.@sum.x", 200, ""),
            ("none", "a", 404, "notFound"),
        ])
    func badReads(object: String, keyPath: String, status: Int, code: String) throws {
        try withServer { _, client in
            try Self.seed(client)
            let response = try client.get("/v1/objects/\(object)/values/\(keyPath)")
            #expect(response.status == status, "\(response.text)")
            if !code.isEmpty { #expect(response.errorCode == code, "\(response.text)") }
        }
    }

    @Test("operators refuse elements they cannot aggregate with typeMismatch")
    func operatorTypes() throws {
        try withServer { _, client in
            try client.createObject("o", values: ["items": [["v": 1], ["v": "two"]], "flags": [true, false]])
            try expectRefused(client, 400, "typeMismatch") { try client.get("/v1/objects/o/values/items.@sum.v") }
            try expectRefused(client, 400, "typeMismatch") { try client.get("/v1/objects/o/values/items.@max.v") }
            #expect(try client.value("o", "items.@count") == 2)
        }
    }

    @Test("PUT sets through plain objects and references (setValue:forKeyPath:)")
    func writes() throws {
        try withServer { _, client in
            try Self.seed(client)
            #expect(
                try client.send("PUT", "/v1/objects/d/values/meta.address.city", json: ["value": "Lyon"]).status == 200)
            #expect(try client.value("d", "meta.address.city") == "Lyon")
            #expect(try client.value("d", "meta.floor") == 3)
            let throughRef = try client.send("PUT", "/v1/objects/d/values/boss.salary", json: ["value": 120])
            #expect(throughRef.status == 200)
            #expect(try client.value("e1", "salary") == 120)
            #expect(try client.get("/v1/objects/e1")["revision"] == throughRef["revision"])
            #expect(try client.value("d", "totalSalary") == 320.5)
            #expect(try client.send("PUT", "/v1/objects/d/values/boss", json: ["value": ["$ref": "e2"]]).status == 200)
            #expect(try client.value("d", "headline") == "R&D led by Alan")
            #expect(
                try client.send("PUT", "/v1/objects/free/values/fresh", json: ["value": ["any": [1, 2]]]).status == 200)
            #expect(try client.value("free", "fresh.any") == [1, 2])
        }
    }

    @Test(
        "bad writes answer 400/404 and change nothing",
        arguments: [
            ("d", "meta.nothing.city", 400, "invalidKeyPath"),
            ("d", "employees.salary", 400, "invalidKeyPath"),
            ("d", "employees.@count", 400, "invalidKeyPath"),
            ("d", "totalSalary", 400, "readOnly"),
            ("d", "headline", 400, "readOnly"),
            ("d", "title.x", 400, "unknownKeyPath"),
            ("d", "boss.wage", 400, "unknownKeyPath"),
            ("free", "text.x", 400, "invalidKeyPath"),
            ("free", "n.x", 400, "invalidKeyPath"),
            ("free", "bad-key", 400, "invalidKeyPath"),
            ("none", "a", 404, "notFound"),
        ])
    func badWrites(object: String, keyPath: String, status: Int, code: String) throws {
        try withServer { _, client in
            try Self.seed(client)
            try expectRefused(client, status, code, readBack: "/v1/objects/d") {
                try client.send("PUT", "/v1/objects/\(object)/values/\(keyPath)", json: ["value": 1])
            }
        }
    }

    @Test("PUT needs a 'value' member")
    func putNeedsValue() throws {
        try withServer { _, client in
            try client.createObject("o")
            try expectRefused(client, 400, "invalidRequest", readBack: "/v1/objects/o") {
                try client.send("PUT", "/v1/objects/o/values/a", json: ["valeu": 1])
            }
            try expectRefused(client, 400, "invalidRequest", readBack: "/v1/objects/o") {
                try client.send("PUT", "/v1/objects/o/values/a", json: [:])
            }
        }
    }

    @Test("a reference to a deleted object reads as null, and cannot be written through")
    func danglingReference() throws {
        try withServer { _, client in
            try Self.seed(client)
            #expect(try client.delete("/v1/objects/e1").status == 204)
            #expect(try client.value("d", "boss.name") == nil)
            #expect(try client.value("d", "boss") == nil)
            #expect(try client.value("d", "employees.name") == [nil, "Alan", "Grace"])
            try expectRefused(client, 400, "invalidKeyPath", readBack: "/v1/objects/d") {
                try client.send("PUT", "/v1/objects/d/values/boss.name", json: ["value": "x"])
            }
        }
    }

    @Test("to-many mutations follow NSIndexSet rules", arguments: mutationsCases)
    func mutations(mutation: JSON, expected: JSON) throws {
        try withServer { _, client in
            try client.createObject("m", values: ["list": [1, 2, 3]])
            let response = try client.send("POST", "/v1/objects/m/values/list/mutations", json: mutation)
            #expect(response.status == 200, "\(response.text)")
            #expect(try client.value("m", "list") == expected)
        }
    }

    @Test("bad mutations answer 400/404 and change nothing", arguments: badMutationsCases)
    func badMutations(mutation: JSON, path: String, status: Int, code: String) throws {
        try withServer { _, client in
            try client.defineClass(
                "T",
                [
                    "list": ["type": "array"], "text": ["type": "string"], "missing": ["type": "any"],
                    "ints": ["type": "array", "items": ["type": "integer"]],
                ])
            try client.createObject("m", className: "T", values: ["list": [1, 2, 3], "text": "abc", "ints": [1]])
            if status == 200 {
                #expect(try client.send("POST", "/v1/objects/m/values\(path)/mutations", json: mutation).status == 200)
                return
            }
            try expectRefused(client, status, code, readBack: "/v1/objects/m") {
                try client.send("POST", "/v1/objects/m/values\(path)/mutations", json: mutation)
            }
        }
    }

    @Test("POST notify checks its key paths and takes a revision")
    func notify() throws {
        try withServer { _, client in
            try client.defineClass("A", ["balance": ["type": "number", "notify": "manual"]])
            try client.createObject("a", className: "A", values: ["balance": 1])
            #expect(try client.send("POST", "/v1/objects/a/notify", json: ["keyPaths": ["balance"]]).status == 200)
            try expectRefused(client, 400, "unknownKeyPath") {
                try client.send("POST", "/v1/objects/a/notify", json: ["keyPaths": ["balanc"]])
            }
            try expectRefused(client, 400, "invalidRequest") {
                try client.send("POST", "/v1/objects/a/notify", json: ["keyPaths": []])
            }
            try expectRefused(client, 400, "typeMismatch") {
                try client.send("POST", "/v1/objects/a/notify", json: ["keyPaths": [1]])
            }
            try expectRefused(client, 404, "notFound") {
                try client.send("POST", "/v1/objects/b/notify", json: ["keyPaths": ["x"]])
            }
        }
    }
}

private let readsCases: [(String, String, JSON)] = [
    ("d", "title", "R&D"),
    ("d", "meta.address.city", "Paris"),
    ("d", "meta.missing.deeper", nil),
    ("d", "boss.name", "Ada"),
    ("d", "employees.name", ["Ada", "Alan", "Grace"]),
    ("d", "employees.tags", [["x", "y"], ["y"], nil]),
    ("d", "employees.@count", 3),
    ("d", "employees.@sum.salary", 300.5),
    ("d", "employees.@avg.salary", .double(300.5 / 3)),
    ("d", "employees.@min.salary", 50),
    ("d", "employees.@max.name", "Grace"),
    ("d", "employees.@unionOfObjects.name", ["Ada", "Alan", "Grace"]),
    ("d", "totalSalary", 300.5),
    ("d", "headline", "R&D led by Ada"),
    ("free", "list.@count", 5),
    ("free", "list.@distinctUnionOfObjects.x", []),
    ("free", "n.@count", 0),
    ("free", "n.@sum.x", 0),
    ("free", "n.@avg.x", nil),
    ("free", "missing", nil),
    ("free", "text.length", nil),
]

private let mutationsCases: [(JSON, JSON)] = [
    (["kind": "insertion", "indexes": [0, 3], "values": ["a", "b"]], ["a", 1, 2, "b", 3]),
    (["kind": "insertion", "indexes": [3], "values": ["z"]], [1, 2, 3, "z"]),
    (["kind": "insertion", "indexes": [3, 4], "values": ["y", "z"]], [1, 2, 3, "y", "z"]),
    (["kind": "removal", "indexes": [0, 2]], [2]),
    (["kind": "replacement", "indexes": [1], "values": ["c"]], [1, "c", 3]),
]

private let badMutationsCases: [(JSON, String, Int, String)] = [
    (["kind": "insertion", "indexes": [5], "values": ["a"]], "/list", 400, "indexOutOfRange"),
    (["kind": "insertion", "indexes": [1, 4], "values": ["a", "b"]], "/list", 200, ""),
    (["kind": "insertion", "indexes": [4, 5], "values": ["a", "b"]], "/list", 400, "indexOutOfRange"),
    (["kind": "insertion", "indexes": [4, 6], "values": ["a", "b"]], "/list", 400, "indexOutOfRange"),
    (["kind": "removal", "indexes": [3]], "/list", 400, "indexOutOfRange"),
    (["kind": "removal", "indexes": [-1]], "/list", 400, "indexOutOfRange"),
    (["kind": "replacement", "indexes": [1], "values": []], "/list", 400, "invalidRequest"),
    (["kind": "removal", "indexes": [2, 1]], "/list", 400, "invalidRequest"),
    (["kind": "removal", "indexes": [1, 1]], "/list", 400, "invalidRequest"),
    (["kind": "removal", "indexes": [0], "values": [1]], "/list", 400, "invalidRequest"),
    (["kind": "removal", "indexes": []], "/list", 400, "invalidRequest"),
    (["kind": "move", "indexes": [0]], "/list", 400, "invalidRequest"),
    (["kind": "removal", "indexes": ["0"]], "/list", 400, "typeMismatch"),
    (["kind": "removal", "indexes": [0]], "/text", 400, "notACollection"),
    (["kind": "removal", "indexes": [0]], "/missing", 400, "notACollection"),
    (["kind": "removal", "indexes": [0]], "/list.@count", 400, "invalidKeyPath"),
    (["kind": "insertion", "indexes": [0], "values": ["s"]], "/ints", 400, "typeMismatch"),
]
