import Testing

@testable import ObsServer

/// `PathSegments`: the path split at `/` in place, each segment decoded on its own when read,
/// compared with a text as `String` compares the decoded segment.
@Suite("Path segments: split in place, decoded when read")
struct PathSegmentsTests {
    /// Each path's segments, decoded, as the split-then-decode rule gives them (section 1).
    static let splits: [(path: String, segments: [String])] = [
        ("/", []), ("", []), ("/a", ["a"]), ("/a/", ["a", ""]), ("//", ["", ""]), ("/a//b", ["a", "", "b"]),
        ("a/b", ["a", "b"]), ("/v1/objects/x%2Fy/values/n", ["v1", "objects", "x/y", "values", "n"]),
        ("/v1/objects/a%00b", ["v1", "objects", "a\u{0}b"]), ("/%E2%84%AA", ["\u{212A}"]), ("/%zz/%4", ["%zz", "%4"]),
        ("/é/ü", ["é", "ü"]),
        // ASCII segments are made in place up to 15 bytes: around that length, and beyond ASCII there.
        (
            "/abcdefghijklmn/abcdefghijklmno/abcdefghijklmnop/abcdefghijklm\u{E9}/abcdefghijk%41%FF",
            ["abcdefghijklmn", "abcdefghijklmno", "abcdefghijklmnop", "abcdefghijklm\u{E9}", "abcdefghijkA\u{FFFD}"]
        ),
        // Deeper than 8 segments, and longer than 255 bytes: their places are kept another way.
        ("/1/2/3/4/5/6/7/8/9/10/", ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", ""]),
        ("/" + String(repeating: "x", count: 300) + "/y", [String(repeating: "x", count: 300), "y"]),
        ("/v1/" + String(repeating: "a", count: 260) + "/%41", ["v1", String(repeating: "a", count: 260), "A"]),
    ]

    @Test("splits at / first, then decodes each segment", arguments: splits)
    func split(path: String, segments: [String]) {
        let split = PathSegments(path)
        #expect(split.path == path)
        #expect(Array(split) == segments)
    }

    @Test("a segment is a text exactly when its decoded string == the text")
    func comparisons() {
        let path = PathSegments("/v1/%6Fbjects/objects/object/K/%E2%84%AA/\u{212A}/v%31/")
        #expect(path.segment(0, is: "v1") && path.inAPI)
        #expect(path.segment(1, is: "objects"), "decoded first")
        #expect(path.segment(2, is: "objects") && !path.segment(2, is: "object") && !path.segment(3, is: "objects"))
        #expect(path.segment(4, is: "K"))
        // String compares by canonical equivalence: a KELVIN SIGN, sent or encoded, is a K.
        #expect(path.segment(5, is: "K") == ("\u{212A}" == "K") && path.segment(6, is: "K") == ("\u{212A}" == "K"))
        #expect(path.segment(7, is: "v1") && !path.segment(8, is: "v1") && path.segment(8, is: ""))
        #expect(PathSegments("/v%31/x").inAPI && !PathSegments("/v2/x").inAPI && !PathSegments("/").inAPI)
        #expect(PathSegments("/metrics").are("metrics") && !PathSegments("/metrics/").are("metrics"))
        #expect(PathSegments("/v1/events").are("v1", "events") && !PathSegments("/v1/events/x").are("v1", "events"))
    }

    @Test("a pattern matches as many segments, each literal equal, each parameter a name")
    func patterns() {
        let pattern = PathPattern("/v1/objects/{id}/values/{keyPath}")
        #expect(pattern.count == 5 && pattern.parameters.map(\.name) == ["id", "keyPath"])
        for path in [
            "/v1/objects/a/values/b", "/v1/%6Fbjects/a%2Fb/values/%41", "/v1/objects/a b/values/~",
            "v1/objects/a/values/b",
        ] {
            #expect(PathSegments(path).matches(pattern), "\(path)")
        }
        for path in [
            "/v1/objects/a/values/b/", "/v1/objects//values/b", "/v1/objects/a%00/values/b", "/v1/objects/é/values/b",
            "/v1/object/a/values/b", "/v1/objects/a/values", "/v1/objects/a/Values/b", "/v1/objects/a/values/%C3%A9",
            "/v1/objects/a%7F/values/b", "/v2/objects/a/values/b",
        ] {
            #expect(!PathSegments(path).matches(pattern), "\(path)")
        }
        #expect(PathSegments("/").matches(PathPattern("/")) && !PathSegments("//").matches(PathPattern("/")))
    }

    @Test("a name is 1 or more printable ASCII characters once decoded")
    func names() {
        let path = PathSegments("/a b/%41/%00/x%1F/%7E/%7F/é/%C3%A9//~/\u{7F}")
        let expected = [true, true, false, false, true, false, false, false, false, true, false]
        #expect(path.indices.map(path.isName) == expected)
    }
}
