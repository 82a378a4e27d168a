import Foundation
import ObservationCore
import Testing

/// Seconds each fuzz test runs (`OBS_FUZZ_SECONDS`, default 2): bounded in CI, longer by hand.
private let fuzzSeconds = Double(ProcessInfo.processInfo.environment["OBS_FUZZ_SECONDS"] ?? "") ?? 2

/// Pieces that make interesting JSON and key paths when glued together at random.
private let jsonPieces = [
    "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\ud800", "\\udc00", "0", "-", "1e", "1.5", "1e999", "-0",
    "true", "false", "null", "\"a\"", "\"$ref\"", " ", "\n", "\u{0}", "\u{7f}", "é", "😀", "\u{ffff}",
    "12345678901234567890", "0.000000001", "[[[[[[[[", "]]]]]]]]", "{\"k\":", "\"\\n\"",
]
private let keyPathPieces = [
    "a", "b_1", "_", ".", "..", "@count", "@sum", "@avg", "@max", "@min", "@distinctUnionOfObjects",
    "@unionOfObjects", "@", "1", "é", " ", "$", "name", String(repeating: "k", count: 130),
]

@Suite("Fuzz: the JSON and key-path parsers never crash and never accept garbage silently")
struct FuzzTests {
    @Test("random and mutated JSON: a value that round-trips, or invalidJSON; never a crash")
    func jsonParser() {
        var random = SeededGenerator(seed: 0x0B5E_7E12)
        let deadline = Date().addingTimeInterval(fuzzSeconds)
        var accepted = 0
        var refused = 0
        while Date() < deadline {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 1...24, using: &random) {
                if Bool.random(using: &random) {
                    bytes += Array(jsonPieces.randomElement(using: &random)!.utf8)
                } else {
                    bytes.append(UInt8.random(in: 0...255, using: &random))
                }
            }
            do {
                let value = try JSONParser.parse(bytes)
                let again = try JSONParser.parse(value.encoded())
                #expect(again == value, "round trip of \(String(decoding: bytes, as: UTF8.self))")
                accepted += 1
            } catch {
                #expect(error.code == .invalidJSON)
                refused += 1
            }
        }
        #expect(refused > 1000, "the generator produced too little garbage")
        #expect(accepted > 10, "the generator never produced valid JSON")
    }

    @Test("deep nesting is refused at the limit, never a stack overflow")
    func deepNesting() {
        for depth in [63, 64, 65, 1000, 100_000] {
            let text = String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            let parsed = try? JSONParser.parse(text)
            #expect((parsed != nil) == (depth <= 64), "depth \(depth)")
        }
    }

    @Test("random key paths: parsed or invalidKeyPath; a parsed one prints back as given")
    func keyPathParser() {
        var random = SeededGenerator(seed: 0x00C0_FFEE)
        let deadline = Date().addingTimeInterval(fuzzSeconds)
        var accepted = 0
        while Date() < deadline {
            let text = (0..<Int.random(in: 1...8, using: &random)).map { _ in
                keyPathPieces.randomElement(using: &random)!
            }.joined(separator: Bool.random(using: &random) ? "." : "")
            do {
                let path = try KeyPath(text)
                #expect(path.description == text)
                accepted += 1
            } catch {
                #expect(error.code == .invalidKeyPath || error.code == .invalidName, "\(text): \(error.code)")
            }
        }
        #expect(accepted > 100)
    }
}
