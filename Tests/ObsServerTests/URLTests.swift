import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// Section 1's URL rule: the path is split at `/` first, then each segment is decoded on its
/// own; a decoded segment holding `/`, NUL or another control character never names anything.
@Suite("URLs: split first, decode each segment, never truncate")
struct URLTests {
    /// Requests whose segment decodes to something that is not a valid id or key path. Each
    /// must be refused (400 or 404) and change nothing; `victim` and `victim.x` stay as they are.
    static let hostile: [(method: String, path: String, body: JSON?)] = [
        ("GET", "/v1/objects/%00", nil),
        ("GET", "/v1/objects/victim%00anything", nil),
        ("GET", "/v1/objects/victim%2Fvalues%2Fx", nil),
        ("GET", "/v1/objects/victim%0A", nil),
        ("GET", "/v1/objects/%C0%AE%C0%AE", nil),  // an overlong "..": not UTF-8
        ("GET", "/v1/objects/..", nil),
        ("GET", "/v1/objects/%2E%2E", nil),
        ("GET", "/v1/objects/victim/values/x%00y", nil),
        ("GET", "/v1/objects/victim/values/x%2Fy", nil),
        ("GET", "/v1/objects/victim/values/%C0%B8", nil),
        ("GET", "/v1/objects/victim/../stats", nil),
        ("DELETE", "/v1/objects/victim%00anything", nil),
        ("DELETE", "/v1/objects/victim%2F", nil),
        ("DELETE", "/v1/objects/%2E%2E", nil),
        ("PUT", "/v1/objects/victim%00x/values/x", ["value": 666]),
        ("PUT", "/v1/objects/victim/values/x%00", ["value": 666]),
        ("PUT", "/v1/objects/victim/values/x%0A", ["value": 666]),
        ("PATCH", "/v1/objects/victim%00", ["values": ["x": 666]]),
        ("PATCH", "/v1/objects/victim%2Fx", ["values": ["x": 666]]),
        ("POST", "/v1/objects/victim%00/values/list/mutations", ["kind": "removal", "indexes": [0]]),
        ("GET", "/v1/observers/%00/events", nil),
        ("GET", "/v1/observers/%2E%2E/events", nil),
        ("GET", "/v1/observers/x%0Ay/events", nil),
        ("DELETE", "/v1/classes/Thing%00", nil),
        ("PUT", "/v1/classes/Thing%00x", ["properties": [:]]),
        // The edges of the printable range a segment may hold (0x20–0x7E), and beyond ASCII.
        ("GET", "/v1/objects/victim%1F", nil),
        ("PUT", "/v1/objects/victim%7F/values/x", ["value": 666]),
        ("PUT", "/v1/objects/victim/values/x%7F", ["value": 666]),
        ("DELETE", "/v1/objects/victim%FF", nil),
    ]

    @Test("hostile segments are refused and change nothing", arguments: hostile)
    func hostileSegments(method: String, path: String, body: JSON?) throws {
        try withServer { _, client in
            try client.defineClass("Thing", ["x": ["type": "number"], "list": ["type": "array"]])
            try client.createObject("victim", className: "Thing", values: ["x": 1, "list": [1, 2]])
            let revision = try currentRevision(client)
            let response = try body.map { try client.send(method, path, json: $0) } ?? client.send(method, path)
            #expect([400, 404].contains(response.status), "\(method) \(path): \(response.status) \(response.text)")
            #expect(response.errorCode != nil, "\(response.text)")
            #expect(try currentRevision(client) == revision, "\(method) \(path) took a revision")
            #expect(try client.get("/v1/objects/victim")["values"] == ["x": 1, "list": [1, 2]])
            #expect(try client.get("/v1/classes/Thing").status == 200)
        }
    }

    @Test("NUL never truncates: a%00b is not a, and %00 is not the list")
    func nulNeverTruncates() throws {
        try withServer { _, client in
            try client.createObject("a")
            try expectRefused(client, 404, "notFound", readBack: "/v1/objects/a") {
                try client.delete("/v1/objects/a%00b")
            }
            let listing = try client.get("/v1/objects/%00")
            #expect(listing["objects"] == .null, "the object list answered: \(listing.text)")
            let observer = try client.createObserver()
            let events = try client.get("/v1/observers/%00/events")
            #expect(events["observers"] == .null && [400, 404].contains(events.status), "\(events.text)")
            #expect(try client.get("/v1/observers/\(observer)").status == 200)
        }
    }

    @Test("%2F is a character of its segment, never a separator")
    func encodedSlash() throws {
        try withServer { _, client in
            try client.createObject("a", values: ["values": ["x": 1], "x": 2])
            let read = try client.get("/v1/objects/a%2Fvalues%2Fx")
            #expect(read.status == 404 || read.status == 400, "\(read.text)")
            #expect(read["value"] == .null)
            #expect(try client.get("/v1/objects/a/values/values.x")["value"] == 1)
        }
    }

    @Test("a look-alike beyond ASCII never names an ASCII id (Swift's == is canonical equivalence)")
    func lookAlikes() throws {
        try withServer { _, client in
            try client.createObject("K", values: ["n": 1])
            let observer = try client.createObserver()
            try client.observe(observer, "K", "n")
            let kelvin = "%E2%84%AA"  // U+212A KELVIN SIGN, canonically equivalent to K
            #expect(try client.get("/v1/objects/\(kelvin)").status == 404)
            try expectRefused(client, 404, "notFound", readBack: "/v1/objects/K") {
                try client.delete("/v1/objects/\(kelvin)")
            }
            try expectRefused(client, 400, "invalidName") {
                try client.delete("/v1/observers/\(observer)/observations?object=\(kelvin)")
            }
            try expectRefused(client, 400, "invalidKeyPath") {
                try client.delete("/v1/observers/\(observer)/observations?object=K&keyPath=%E2%84%AA")
            }
            #expect(try client.get("/v1/observers/\(observer)")["observations"].arrayCount == 1)
        }
    }

    @Test("percent-encoded valid characters decode to the same id and key path")
    func validEncodings() throws {
        try withServer { _, client in
            try client.createObject("acct-1", values: ["balance": 5])
            #expect(try client.get("/v1/objects/acct%2D1")["id"] == "acct-1")
            #expect(try client.get("/v1/%6Fbjects/acct-1/values/bal%61nce")["value"] == 5)
            let observer = try client.createObserver()
            #expect(try client.get("/v1/observers/\(observer)/observations?object=acct%2D1").status == 200)
        }
    }

    @Test("query arguments are decoded on their own: %00 in one never matches a shorter id")
    func queryArguments() throws {
        try withServer { _, client in
            try client.createObject("a", values: ["n": 1])
            let observer = try client.createObserver()
            try client.observe(observer, "a", "n")
            try expectRefused(client, 400, "invalidName") {
                try client.delete("/v1/observers/\(observer)/observations?object=a%00b")
            }
            try expectRefused(client, 400, "invalidKeyPath") {
                try client.delete("/v1/observers/\(observer)/observations?object=a&keyPath=n%00")
            }
            try expectRefused(client, 404, "notFound") {
                try client.delete("/v1/observers/\(observer)/observations?object=b")
            }
            #expect(try client.get("/v1/observers/\(observer)")["observations"].arrayCount == 1)
            #expect(try client.delete("/v1/observers/\(observer)/observations?object=%61&keyPath=n").status == 204)
        }
    }

    @Test(
        "ids . and .. are valid (the contract's alphabet) and named by their segment: dot-segments are never resolved")
    func dotSegmentIDs() throws {
        try withServer { _, client in
            try client.createObject("a", values: ["n": 1])
            for id in [".", ".."] {
                try client.createObject(id, values: ["n": 2])
                #expect(try client.get("/v1/objects/\(id)")["id"] == .string(id))
                #expect(
                    try client.get("/v1/objects/\(id.replacingOccurrences(of: ".", with: "%2E"))")["id"] == .string(id))
                #expect(try client.get("/v1/objects/\(id)/values/n")["value"] == 2)
            }
            #expect(try client.get("/v1/objects/a/../../objects/a").status == 404, "never resolved to /v1/objects/a")
            #expect(try client.delete("/v1/objects/..").status == 204)
            #expect(try client.get("/v1/objects/a")["values"] == ["n": 1])
        }
    }

    @Test("static files: no dot-segments, no encoded separators, no NUL")
    func staticFiles() throws {
        try withServer { _, client in
            #expect(try client.get("/").status == 200)
            #expect(try client.get("/js/api.js").status == 200)
            for path in [
                "/js/../index.html", "/js%2Fapi.js", "/index.html%00.png", "/%2E%2E/Package.swift", "/js//api.js",
            ] {
                let response = try client.get(path)
                #expect(response.status == 404, "\(path): \(response.status)")
                #expect(response.errorCode == "notFound")
            }
        }
    }

    @Test("an observer's token reaches its own resources through encoded segments, and no further")
    func tokensDecideOnSegments() throws {
        try withServer(configure: { $0.token = "service" }) { _, client in
            let auth = ["Authorization": "Bearer service"]
            let created = try client.send("POST", "/v1/observers", json: [:], headers: auth)
            guard case .string(let id) = created["id"], case .string(let token) = created["token"] else {
                Issue.record("no observer: \(created.text)")
                return
            }
            let own = ["Authorization": "Bearer \(token)"]
            let encoded = "/v1/observers/" + id.replacingOccurrences(of: "o", with: "%6F")
            #expect(try client.get(encoded, headers: own).status == 200)
            #expect(try client.get("/v1/observers/\(id)%2F..%2F..%2Fstats", headers: own).status == 403)
            #expect(try client.get("/v1/stats", headers: own).status == 403)
        }
    }
}

extension JSON {
    /// The number of elements of an array (0 for anything else).
    var arrayCount: Int {
        if case .array(let elements) = self { elements.count } else { 0 }
    }
}
