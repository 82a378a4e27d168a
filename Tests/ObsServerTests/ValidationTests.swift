import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// Request fields the OpenAPI document constrains are checked by the server the same way
/// (schemathesis' negative run covers the document as a whole; these pin the cases found by
/// hand). Each is refused with its code and changes nothing.
@Suite("Validation: every field as the document says")
struct ValidationTests {
    static let refused: [(method: String, path: String, body: JSON?, status: Int, code: String)] = [
        ("POST", "/v1/notifications", ["name": "N", "userInfo": [1]], 400, "typeMismatch"),
        ("POST", "/v1/notifications", ["name": "N", "userInfo": "text"], 400, "typeMismatch"),
        ("POST", "/v1/notifications", ["name": "N", "userInfo": 3], 400, "typeMismatch"),
        ("POST", "/v1/notifications", ["name": "N", "posting": "asap", "userInfo": [true]], 400, "typeMismatch"),
        ("POST", "/v1/notifications", ["name": "N\u{7}"], 400, "invalidName"),
        ("POST", "/v1/notifications", ["name": .string(String(repeating: "é", count: 257))], 400, "invalidName"),
        ("POST", "/v1/notifications", ["name": "N", "object": "a b"], 400, "invalidName"),
        ("GET", "/v1/objects?after=a%20b", nil, 400, "invalidName"),
        ("GET", "/v1/objects?limit=0", nil, 400, "invalidRequest"),
        ("GET", "/v1/objects?limit=x", nil, 400, "invalidRequest"),
        ("POST", "/v1/objects", ["id": 5], 400, "typeMismatch"),
        ("POST", "/v1/objects", ["values": [1]], 400, "typeMismatch"),
        ("POST", "/v1/observers", ["lease": 0], 400, "invalidRequest"),
        ("POST", "/v1/observers", ["replay": "many"], 400, "typeMismatch"),
    ]

    @Test("bad fields are refused with their code and change nothing", arguments: refused)
    func badFields(method: String, path: String, body: JSON?, status: Int, code: String) throws {
        try withServer { _, client in
            try client.createObject("a")
            try expectRefused(client, status, code, readBack: "/v1/objects") {
                try body.map { try client.send(method, path, json: $0) } ?? client.send(method, path)
            }
        }
    }

    @Test("an optional member given as null reads as absent")
    func nullIsAbsent() throws {
        try withServer { _, client in
            let object = try client.send("POST", "/v1/objects", json: ["id": .null, "class": .null, "values": .null])
            #expect(object.status == 201 && object["values"] == [:], "\(object.text)")
            let posted = try client.send("POST", "/v1/notifications", json: ["name": "N", "userInfo": .null])
            #expect(posted.status == 200, "\(posted.text)")
            let page = try client.get("/v1/objects?class=&limit=&after=")  // the contract's own spelling
            #expect(page.status == 200 && page["objects"].arrayCount == 1, "empty arguments read as absent")
        }
    }
}
