import Testing

@testable import ObservationCore

/// Error messages read as sentences (issue 47): "an array", not "a array"; an unknown query
/// operator is called an operator, not a field.
@Suite("Error wording")
struct ErrorWordingTests {
    @Test("type names take the article they are said with; null takes none")
    func articles() throws {
        let names = try ["[]", "1", "{}", "true", "1.5", "\"s\"", "{\"$ref\": \"x\"}", "null"]
            .map { try JSONParser.parse($0).typeNameWithArticle }
        #expect(names == ["an array", "an integer", "an object", "a boolean", "a number", "a string", "a ref", "null"])
        #expect(withArticle("Employee") == "an Employee" && withArticle("Order") == "an Order")
        #expect(withArticle("Department") == "a Department")
    }

    @Test("a value of the wrong type says what it is with its article")
    func typeMismatch() throws {
        let store = Store()
        _ = try store.as(.admin).defineClass("Employee", definition: ["properties": ["salary": ["type": "integer"]]])
        _ = try store.as(.admin).createObject(id: "e", className: "Employee", values: [:])
        do {
            _ = try store.as(.admin).setValue(["x"], of: "e", at: "salary")
            Issue.record("an array was accepted as an integer")
        } catch {
            #expect(error.code == .typeMismatch)
            #expect(error.message.contains("is an integer, not an array"), "\(error.message)")
        }
    }

    @Test("an unknown query operator is named as an operator, with a suggestion and the list")
    func unknownOperator() throws {
        let store = Store()
        _ = try store.as(.admin).defineClass("Order", definition: ["properties": ["total": ["type": "number"]]])
        let observer = try store.as(.admin).createObserver(ObserverSettings()).observer.id
        do {
            _ = try store.as(.admin).registerQuery(
                observerID: observer, definition: ["class": "Order", "where": [["total", "=", 1]]], options: [])
            Issue.record("the operator '=' was accepted")
        } catch {
            #expect(error.code == .invalidRequest)
            #expect(error.message.hasPrefix("'where': unknown operator '='; did you mean '=='?"), "\(error.message)")
            #expect(!error.message.contains("field"))
            #expect(error.details["operator"] == "=" && error.details["suggestion"] == "==")
            #expect(error.details["field"] == "where")
        }
    }
}
