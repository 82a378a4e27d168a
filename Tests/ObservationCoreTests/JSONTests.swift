import Testing

@testable import ObservationCore

@Suite("JSON parsing and writing")
struct JSONTests {
    @Test("values written alike: equal numbers, members and strings told apart by their spelling")
    func writtenAlike() throws {
        let long = String(repeating: "abcdefgh", count: 40) + "xyz"
        let copy = String(decoding: Array(long.utf8), as: UTF8.self)  // the same bytes, another storage
        let other = String(long.dropLast()) + "w"
        #expect(JSON.string(long).encodesLike(.string(copy)))
        #expect(!JSON.string(long).encodesLike(.string(other)), "the last byte differs")
        #expect(!JSON.string(long).encodesLike(.string(String(long.dropLast()))))
        #expect(!JSON.string("\u{E9}").encodesLike(.string("e\u{301}")), "equal as Unicode, not as bytes")
        #expect(JSON.int(1) == .double(1) && !JSON.int(1).encodesLike(.double(1)))
        let ab: JSON = ["a": 1, "b": [1, "x"]]
        #expect(ab.encodesLike(try JSONParser.parse(#"{"a":1,"b":[1,"x"]}"#)))
        #expect(ab == ["b": [1, "x"], "a": 1] && !ab.encodesLike(["b": [1, "x"], "a": 1]))
    }

    @Test("valid documents parse to the expected value", arguments: validCases)
    func parses(text: String, expected: JSON) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test("what is written parses back to the same value", arguments: validCases)
    func roundTrips(text: String, expected: JSON) throws {
        let written = String(decoding: expected.encoded(), as: UTF8.self)
        #expect(try JSONParser.parse(written) == expected, "\(written)")
    }

    @Test(
        "malformed documents are refused with invalidJSON",
        arguments: [
            "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "'x'", "01", "1.", ".5", "1e", "-", "+1",
            "NaN", "Infinity", "tru", "nulll", "\"abc", "\"\\q\"", "\"\\u12\"", "\"\\ud800\"", "\"\u{7}\"", "[1 2]",
            "1 2", "{\"a\":1}}", "1e999",
        ])
    func refuses(text: String) {
        #expect(throws: CoreError.self) { try JSONParser.parse(text) }
        do {
            _ = try JSONParser.parse(text)
        } catch {
            #expect(error.code == .invalidJSON)
            #expect(error.details["offset"] != nil)
        }
    }

    @Test(
        "invalid UTF-8 inside a string is refused, with or without escapes",
        arguments: [
            [0xFF, 0xFE], [0x80], [0xC0, 0x80], [0xED, 0xA0, 0x80], [0xE2, 0x82], [0xF5, 0x80, 0x80, 0x80],
            [0x61, 0xEF, 0xBF], [0x5C, 0x6E, 0xC3], [0xC3, 0x5C, 0x6E],
        ] as [[UInt8]])
    func invalidUTF8(inner: [UInt8]) {
        #expect(throws: CoreError.self) { try JSONParser.parse([0x22] + inner + [0x22]) }
    }

    @Test(
        "valid UTF-8 strings keep their bytes, with or without escapes",
        arguments: [
            (#""plain""#, "plain"), (#""é""#, "é"), (#""a€b""#, "a€b"), (#""😀""#, "😀"),
            ("\"\u{FFFD}\"", "\u{FFFD}"), (#""tab\tthen é""#, "tab\tthen é"), (#""\u00e9 é""#, "é é"),
        ])
    func validUTF8(json: String, text: String) throws {
        #expect(try JSONParser.parse(json) == .string(text))
    }

    @Test("ASCII strings of 0 to 20 bytes, values and member names, read as the bytes decoded", arguments: 0...20)
    func asciiStrings(length: Int) throws {
        let printable = (0x20...0x7E).map(UInt8.init).filter { $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }
        for shift in [0, 31, 62] {
            let bytes = (0..<length).map { printable[($0 * 7 + shift) % printable.count] }
            let expected = String(decoding: bytes, as: UTF8.self)
            let made = bytes.withUnsafeBufferPointer { String(validatedASCII: $0) }
            #expect(made == expected && made.hashValue == expected.hashValue)
            #expect(Array(made.utf8) == bytes && made.count == length && made + "é" == expected + "é")
            let quoted = [UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")]
            #expect(try JSONParser.parse(quoted) == .string(expected))
            #expect(try JSONParser.parse(quoted[...]) == .string(expected), "any collection, contiguous")
            #expect(try JSONParser.parse(quoted.lazy.map { $0 }) == .string(expected), "or not")
            let object = try JSONParser.parse([UInt8(ascii: "{")] + quoted + Array(#":1}"#.utf8))
            #expect(object == .object([expected: 1]))
            guard case .object(let members) = object else { return }
            #expect(members.keys == [expected] && [expected: 2][members.keys[0]] == 2)
        }
    }

    @Test("strings beyond ASCII and invalid UTF-8 at and around 15 bytes", arguments: 12...17)
    func aroundFifteen(length: Int) throws {
        let ascii = Array(repeating: UInt8(ascii: "a"), count: length - 2)
        let text = String(decoding: ascii + [0xC3, 0xA9], as: UTF8.self)  // ends in é
        #expect(try JSONParser.parse(Array("\"\(text)\"".utf8)) == .string(text))
        #expect(try JSONParser.parse(Array("{\"\(text)\":1}".utf8)) == .object([text: 1]))
        for bad: [UInt8] in [ascii + [0xC3, 0x28], ascii + [0xFF, 0x61], [0xC3] + ascii + [0x61]] {
            #expect(throws: CoreError.self) { try JSONParser.parse([0x22] + bad + [0x22]) }
            #expect(throws: CoreError.self) { try JSONParser.parse([0x7B, 0x22] + bad + Array(#"":1}"#.utf8)) }
        }
    }

    @Test("text longer than the writer's stack buffer moves to the heap whole, escapes and all")
    func longText() throws {
        let element = "ab\"c\n\u{01}é\\"
        let encodedElement = #""ab\"c\n\u0001é\\""#
        for count in [1, 51, 52, 300] {  // 20 bytes an element: 52 pass the 1,024 bytes on the stack
            let value = JSON.array(Array(repeating: .string(element), count: count))
            let expected = "[" + Array(repeating: encodedElement, count: count).joined(separator: ",") + "]"
            let bytes = value.encoded()
            #expect(String(decoding: bytes, as: UTF8.self) == expected)
            #expect(bytes.count == expected.utf8.count)
            #expect(try JSONParser.parse(bytes) == value)
        }
        // One piece over twice the room: the buffer doubles until it fits.
        let long = String(repeating: "x", count: 5_000) + "\u{02}"
        let bytes = JSON.string(long).encoded()
        #expect(String(decoding: bytes, as: UTF8.self) == "\"" + String(repeating: "x", count: 5_000) + "\\u0002\"")
    }

    @Test(
        "integers are written as their decimal digits", arguments: [0, 7, 9, 10, 99, 100, 12_345, -1, -10, .max, .min])
    func integers(number: Int) {
        #expect(String(decoding: JSONWriter.encode { $0.write(number) }, as: UTF8.self) == String(number))
        var appended: [UInt8] = [UInt8(ascii: "x")]
        JSONWriter.appendDecimal(number, to: &appended)
        #expect(String(decoding: appended, as: UTF8.self) == "x\(number)")
    }

    @Test("nesting is limited to 64 levels by default")
    func depthLimit() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: Never.self) { try JSONParser.parse(ok) }
        #expect(throws: CoreError.self) { try JSONParser.parse(deep) }
        #expect(throws: CoreError.self) { try JSONParser.parse(String(repeating: "[", count: 100_000)) }
    }

    @Test("strings over maxStringBytes (values, member names, escaped or not) are payloadTooLarge")
    func stringLimit() throws {
        #expect(try JSONParser.parse("[\"abcd\", {\"efgh\": \"\\u00e9\\u00e9\"}]", maxStringBytes: 4) != nil)
        for text in ["\"abcde\"", "{\"abcde\": 1}", "[\"ab\\ncd\"]", "\"\\u00e9\\u00e9\\u00e9\""] {
            do throws(CoreError) {
                _ = try JSONParser.parse(text, maxStringBytes: 4)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.code == .payloadTooLarge, "\(text)")
                #expect(error.details["limit"] == 4)
            }
        }
    }

    @Test("numbers compare numerically and objects without regard to order")
    func equality() throws {
        #expect(JSON.int(1) == JSON.double(1.0))
        #expect(JSON.int(1).hashValue == JSON.double(1.0).hashValue)
        #expect(try JSONParser.parse("{\"a\":1,\"b\":2}") == JSONParser.parse("{\"b\":2,\"a\":1}"))
        #expect(JSON.string("1") != JSON.int(1))
        #expect(JSON.array([1, 2]) != JSON.array([2, 1]))
    }

    @Test("objects keep insertion order in output")
    func order() throws {
        #expect(try JSONParser.parse("{\"z\":1,\"a\":2,\"y\":3}").description == "{\"z\":1,\"a\":2,\"y\":3}")
    }

    @Test(
        "a member name twice in one object is invalidJSON at the second name, escaped or not, in a large object too",
        arguments: [
            ("{\"z\":1,\"a\":2,\"z\":3}", 13), ("{\"a\":{\"b\":1,\"b\":2}}", 12), ("{\"a\":1,\"\\u0061\":2}", 7),
            ("{" + (0..<40).map { "\"k\($0)\":\($0)," }.joined() + "\"k7\":0}", 341),
        ])
    func duplicateNames(text: String, offset: Int) {
        do {
            _ = try JSONParser.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.code == .invalidJSON)
            #expect(error.message.contains("duplicate member name"))
            #expect(error.details["offset"] == .int(offset))
        }
    }

    @Test("the same name in different objects, nested or side by side, is no duplicate")
    func sameNameElsewhere() throws {
        let json = try JSONParser.parse("{\"a\":{\"a\":1},\"b\":[{\"a\":2},{\"a\":3}]}")
        #expect(json.description == "{\"a\":{\"a\":1},\"b\":[{\"a\":2},{\"a\":3}]}")
    }

    @Test("strings are escaped so the output is valid JSON")
    func escaping() throws {
        let value = JSON.string("quote\" backslash\\ newline\n tab\t bell\u{7} é 😀")
        let text = value.description
        #expect(text == "\"quote\\\" backslash\\\\ newline\\n tab\\t bell\\u0007 é 😀\"")
        #expect(try JSONParser.parse(text) == value)
        // Escapes first and last, and back to back.
        #expect(JSON.string("\"\r\u{1F}x\\").description == #""\"\r\u001fx\\""#)
        #expect(JSON.string("").description == #""""#)
    }

    @Test("references are recognised only in their exact form")
    func references() throws {
        #expect(try JSONParser.parse("{\"$ref\":\"p1\"}").referencedID == "p1")
        #expect(try JSONParser.parse("{\"$ref\":\"p1\",\"x\":1}").referencedID == nil)
        #expect(try JSONParser.parse("{\"$ref\":1}").referencedID == nil)
    }
}

private let validCases: [(String, JSON)] = [
    ("null", nil), ("true", true), ("false", false), ("0", 0), ("-12", -12), ("3.25", 3.25), ("1e3", 1000.0),
    ("-0.5E-2", -0.005), ("9223372036854775807", .int(Int.max)), ("-9223372036854775808", .int(Int.min)),
    ("9223372036854775808", 9223372036854775808.0), ("-9223372036854775809", -9223372036854775809.0),
    ("-0", 0), ("1.5e300", 1.5e300),
    ("\"\"", ""), ("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "a\"b\\c/d\u{8}\u{c}\n\r\t"),
    ("\"\\u00e9\\ud83d\\ude00\"", "é😀"),
    ("\"é😀\"", "é😀"), (" [ ] ", []), ("[1,\"x\",null,[true]]", [1, "x", nil, [true]]), ("{}", [:]),
    ("{\"a\":{\"b\":[1,{\"c\":null}]}}", ["a": ["b": [1, ["c": nil]]]]), ("\n\t{\"k\" : 1 }\r\n", ["k": 1]),
]
