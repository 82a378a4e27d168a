import ObservationCore
import Testing

@testable import ObsServer

@Suite("Classes API")
struct ClassAPITests {
    static let person: JSON = [
        "firstName": ["type": "string"],
        "lastName": ["type": "string"],
        "fullName": ["type": "string", "computed": "{firstName} {lastName}", "dependsOn": ["firstName", "lastName"]],
        "balance": ["type": "number", "notify": "onChange"],
    ]

    @Test("PUT creates (201) then replaces (200); GET and the list show it")
    func createReplaceGet() throws {
        try withServer { _, client in
            let created = try client.send("PUT", "/v1/classes/Person", json: ["properties": Self.person])
            #expect(created.status == 201)
            #expect(created["name"] == "Person")
            #expect(created["objects"] == 0)
            guard case .object(let properties) = created["properties"] else { Issue.record("no properties"); return }
            #expect(properties.keys == ["firstName", "lastName", "fullName", "balance"])
            #expect(properties["balance"] == ["type": "number", "notify": "onChange"])
            let replaced = try client.send(
                "PUT", "/v1/classes/Person", json: ["properties": ["firstName": ["type": "string"]]])
            #expect(replaced.status == 200)
            #expect(try client.get("/v1/classes/Person")["properties"] == ["firstName": ["type": "string"]])
            let list = try client.get("/v1/classes")
            guard case .array(let classes) = list["classes"] else { Issue.record("no list"); return }
            #expect(classes.count == 1)
        }
    }

    @Test("DELETE removes an unused class and refuses (409) one in use")
    func delete() throws {
        try withServer { _, client in
            try client.defineClass("Person", Self.person)
            try client.createObject("p1", className: "Person")
            try expectRefused(client, 409, "conflict", readBack: "/v1/classes/Person") {
                try client.delete("/v1/classes/Person")
            }
            #expect(try client.delete("/v1/objects/p1").status == 204)
            #expect(try client.delete("/v1/classes/Person").status == 204)
            try expectRefused(client, 404, "notFound") { try client.get("/v1/classes/Person") }
            try expectRefused(client, 404, "notFound") { try client.delete("/v1/classes/Person") }
        }
    }

    @Test("a replacement that existing objects violate answers 409")
    func replaceConflict() throws {
        try withServer { _, client in
            try client.defineClass("Person", Self.person)
            try client.createObject("p1", className: "Person", values: ["firstName": "Ada", "balance": 3])
            try expectRefused(client, 409, "conflict", readBack: "/v1/classes/Person") {
                try client.send(
                    "PUT", "/v1/classes/Person",
                    json: ["properties": ["firstName": ["type": "number"], "balance": ["type": "number"]]])
            }
            try expectRefused(client, 409, "conflict", readBack: "/v1/classes/Person") {
                try client.send("PUT", "/v1/classes/Person", json: ["properties": ["balance": ["type": "number"]]])
            }
        }
    }

    @Test("a replacement that breaks another class's computed key path answers 409")
    func replaceBreaksOthers() throws {
        try withServer { _, client in
            try client.defineClass("Employee", ["salary": ["type": "number"]])
            try client.defineClass(
                "Dept",
                [
                    "employees": ["type": "array", "items": ["type": "ref", "class": "Employee"]],
                    "total": ["type": "number", "computed": "employees.@sum.salary"],
                ])
            try expectRefused(client, 409, "conflict", readBack: "/v1/classes/Employee") {
                try client.send("PUT", "/v1/classes/Employee", json: ["properties": ["pay": ["type": "number"]]])
            }
        }
    }

    @Test("invalid definitions answer 400 with the reason", arguments: invalidDefinitionsCases)
    func invalidDefinitions(definition: JSON, code: String) throws {
        try withServer { _, client in
            try expectRefused(client, 400, code) { try client.send("PUT", "/v1/classes/Thing", json: definition) }
            try expectRefused(client, 404, "notFound") { try client.get("/v1/classes/Thing") }
        }
    }

    @Test("a class name outside the naming rule answers 400 invalidName")
    func invalidClassName() throws {
        try withServer { _, client in
            try expectRefused(client, 400, "invalidName") {
                try client.send("PUT", "/v1/classes/bad%20name", json: ["properties": [:]])
            }
        }
    }

    @Test("a computed value that reads itself through references is caught at definition")
    func cycleThroughReferences() throws {
        try withServer { _, client in
            try expectRefused(client, 400, "invalidRequest") {
                try client.send(
                    "PUT", "/v1/classes/Node",
                    json: [
                        "properties": [
                            "next": ["type": "ref", "class": "Node"],
                            "label": ["type": "string", "computed": "next.label"],
                        ]
                    ])
            }
        }
    }
}

private let invalidDefinitionsCases: [(JSON, String)] = [
    (["properties": ["a": ["type": "strng"]]], "invalidRequest"),
    (["properties": ["a": "string"]], "invalidRequest"),
    (["properties": ["a": ["type": "string", "notify": "sometimes"]]], "invalidRequest"),
    (["properties": ["1a": ["type": "string"]]], "invalidName"),
    (["properties": ["a": ["type": "string", "computed": "{b}"]]], "unknownKeyPath"),
    (["properties": ["a": ["type": "string", "computed": "b..c"]]], "invalidKeyPath"),
    (["properties": ["a": ["type": "string", "computed": "{a}"]]], "invalidRequest"),
    (
        ["properties": ["a": ["type": "number", "computed": "b"], "b": ["type": "number", "computed": "a"]]],
        "invalidRequest"
    ),
    (["properties": ["a": ["type": "string", "dependsOn": ["b"]]]], "invalidRequest"),
    (["properties": ["a": ["type": "string"]], "extra": 1], "invalidRequest"),
    (["props": [:]], "invalidRequest"),
    (["properties": ["a": ["type": "number"], "b": ["type": "number", "computed": "a.@sum.x"]]], "notACollection"),
    (["properties": ["a": ["type": "string", "computed": 3]]], "typeMismatch"),
]
