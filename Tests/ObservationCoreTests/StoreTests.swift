import ObservationCore
import Testing

/// Runs `body` and returns the code of the `CoreError` it throws (nil if it succeeds).
func errorCode(_ body: () throws -> Void) -> CoreError.Code? {
    do {
        try body()
        return nil
    } catch let error as CoreError {
        return error.code
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

@Suite("Store: key-value coding")
struct StoreTests {
    /// Person/Employee/Dept with references, arrays, computed values.
    static func seeded() throws -> Store {
        let store = Store()
        _ = try store.as(.admin).defineClass(
            "Employee", definition: ["properties": ["name": ["type": "string"], "salary": ["type": "number"]]])
        _ = try store.as(.admin).defineClass(
            "Dept",
            definition: [
                "properties": [
                    "employees": ["type": "array", "items": ["type": "ref", "class": "Employee"]],
                    "boss": ["type": "ref", "class": "Employee"],
                    "total": ["type": "number", "computed": "employees.@sum.salary"],
                    "label": ["type": "string", "computed": "{boss.name} ({employees.@count})"],
                ]
            ])
        _ = try store.as(.admin).createObject(id: "e1", className: "Employee", values: ["name": "Ada", "salary": 10])
        _ = try store.as(.admin).createObject(id: "e2", className: "Employee", values: ["name": "Alan", "salary": 20])
        _ = try store.as(.admin).createObject(
            id: "d", className: "Dept",
            values: ["employees": [["$ref": "e1"], ["$ref": "e2"]], "boss": ["$ref": "e1"]])
        return store
    }

    @Test("computed values follow their inputs through references and arrays")
    func computed() throws {
        let store = try Self.seeded()
        #expect(try store.as(.admin).value(of: "d", at: "total").value == 30)
        #expect(try store.as(.admin).value(of: "d", at: "label").value == "Ada (2)")
        _ = try store.as(.admin).setValue(25, of: "e2", at: "salary")
        #expect(try store.as(.admin).value(of: "d", at: "total").value == 35)
        _ = try store.as(.admin).mutate(
            "d", at: "employees", try ArrayMutation(kind: .removal, indexes: [0], values: []))
        #expect(try store.as(.admin).value(of: "d", at: "total").value == 25)
        #expect(try store.as(.admin).object("d").values["label"] == "Ada (1)")
    }

    @Test("a write through a reference changes the referenced object, under the new revision")
    func writeThroughReference() throws {
        let store = try Self.seeded()
        let before = try store.as(.admin).object("d").revision
        let revision = try store.as(.admin).setValue("Ada L.", of: "d", at: "boss.name")
        #expect(try store.as(.admin).object("e1").revision == revision)
        #expect(try store.as(.admin).object("e1").values["name"] == "Ada L.")
        #expect(try store.as(.admin).object("d").revision == before)
    }

    @Test("refused writes change nothing and take no revision")
    func refusedWritesAreAtomic() throws {
        let store = try Self.seeded()
        let snapshot = try store.as(.admin).object("d")
        let revision = store.stats().revision
        #expect(
            errorCode { _ = try store.as(.admin).patch("e1", values: ["name": "x", "salary": "high"]) } == .typeMismatch
        )
        #expect(errorCode { _ = try store.as(.admin).setValue(1, of: "d", at: "total") } == .readOnly)
        #expect(errorCode { _ = try store.as(.admin).setValue(["$ref": "d"], of: "d", at: "boss") } == .typeMismatch)
        #expect(errorCode { _ = try store.as(.admin).setValue(["$ref": "nobody"], of: "d", at: "boss") } == .notFound)
        #expect(errorCode { _ = try store.as(.admin).setValue(1, of: "d", at: "employees.salary") } == .invalidKeyPath)
        #expect(
            errorCode { _ = try store.as(.admin).patch("d", values: ["boss": nil], ifRevision: 1) } == .revisionMismatch
        )
        #expect(try store.as(.admin).object("d") == snapshot)
        #expect(try store.as(.admin).object("e1").values["name"] == "Ada")
        #expect(store.stats().revision == revision)
    }

    @Test("an empty PATCH changes nothing and takes no revision")
    func emptyPatch() throws {
        let store = try Self.seeded()
        let revision = store.stats().revision
        #expect(try store.as(.admin).patch("d", values: [:]) == store.as(.admin).object("d").revision)
        #expect(store.stats().revision == revision)
    }

    @Test("deleting a referenced object leaves references reading null")
    func weakReferences() throws {
        let store = try Self.seeded()
        _ = try store.as(.admin).deleteObject("e1")
        #expect(try store.as(.admin).value(of: "d", at: "boss.name").value == nil)
        #expect(try store.as(.admin).value(of: "d", at: "total").value == 20)
        #expect(try store.as(.admin).object("d").values["boss"] == JSON.null)
    }

    @Test("classes: replacing is refused while objects violate it; deleting while used")
    func classLifecycle() throws {
        let store = try Self.seeded()
        #expect(
            errorCode {
                _ = try store.as(.admin).defineClass(
                    "Employee", definition: ["properties": ["name": ["type": "number"]]])
            } == .conflict)
        #expect(errorCode { _ = try store.as(.admin).deleteClass("Employee") } == .conflict)
        let (snapshot, created) = try store.as(.admin).defineClass(
            "Employee",
            definition: [
                "properties": [
                    "name": ["type": "string"], "salary": ["type": "number"], "title": ["type": "string"],
                ]
            ])
        #expect(!created)
        #expect(snapshot.objectCount == 2)
        #expect(try store.as(.admin).object("e1").values["title"] == JSON.null)
    }

    @Test("the object limit is enforced")
    func objectLimit() throws {
        let store = Store(limits: StoreLimits(maxObjects: 2))
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: [:])
        _ = try store.as(.admin).createObject(id: nil, className: nil, values: [:])
        #expect(
            errorCode { _ = try store.as(.admin).createObject(id: "c", className: nil, values: [:]) } == .limitExceeded)
        #expect(store.stats().objects == 2)
    }

    @Test("templates render null as nothing, numbers and JSON as text")
    func templates() throws {
        let store = Store()
        _ = try store.as(.admin).defineClass(
            "T",
            definition: [
                "properties": [
                    "a": ["type": "any"], "b": ["type": "any"], "t": ["type": "string", "computed": "[{a}|{b}]"],
                ]
            ])
        _ = try store.as(.admin).createObject(id: "t", className: "T", values: ["a": 1.5, "b": nil])
        #expect(try store.as(.admin).value(of: "t", at: "t").value == "[1.5|]")
        _ = try store.as(.admin).patch("t", values: ["a": ["x": true], "b": "s"])
        #expect(try store.as(.admin).value(of: "t", at: "t").value == "[{\"x\":true}|s]")
    }
}
