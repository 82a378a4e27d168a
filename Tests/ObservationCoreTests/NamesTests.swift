import ObservationCore
import Testing

@Suite("Names, key paths and suggestions")
struct NamesTests {
    @Test(
        "ids accept 1–128 of A–Z a–z 0–9 . _ ~ -",
        arguments: [
            ("acct-1", true), ("A.b_c~d-9", true), (String(repeating: "x", count: 128), true),
            ("", false), (String(repeating: "x", count: 129), false), ("a b", false), ("a/b", false), ("é", false),
            ("a:b", false),
        ])
    func ids(text: String, valid: Bool) {
        #expect(Names.isValidID(text) == valid)
    }

    @Test(
        "keys match ^[A-Za-z_][A-Za-z0-9_]{0,127}$",
        arguments: [
            ("name", true), ("_x", true), ("a1_B", true), (String(repeating: "k", count: 128), true),
            ("", false), ("1a", false), ("a-b", false), ("a.b", false), ("@count", false),
            (String(repeating: "k", count: 129), false),
        ])
    func keys(text: String, valid: Bool) {
        #expect(Names.isValidKey(text) == valid)
    }

    @Test(
        "notification names are 1–256 printable characters",
        arguments: [
            ("UserDidLogin", true), ("Ünïcödé name ✓", true), (String(repeating: "n", count: 256), true),
            ("", false), ("tab\there", false), (String(repeating: "n", count: 257), false),
        ])
    func notificationNames(text: String, valid: Bool) {
        #expect(Names.isValidNotificationName(text) == valid)
    }

    @Test(
        "valid key paths parse",
        arguments: [
            "balance", "owner.name", "employees.@count", "transactions.@sum.amount", "a.b.@avg.c.d",
            "x.@distinctUnionOfObjects.y", "x.@unionOfObjects.y", "x.@min.y", "x.@max.y",
            Array(repeating: "k", count: 32).joined(separator: "."),
        ])
    func validKeyPaths(text: String) throws {
        let path = try KeyPath(text)
        #expect(path.description == text)
        #expect(path.components.count == text.split(separator: ".").count)
    }

    @Test(
        "invalid key paths are refused with invalidKeyPath",
        arguments: [
            "", ".", "a.", ".a", "a..b", "a.@count.x", "a.@sum", "@count", "@sum.x", "a.@sum.x.@count", "a.@foo.x",
            "a.b-c", "1a", Array(repeating: "k", count: 33).joined(separator: "."), "a.@count.@count",
            // Bytes, not characters: a combining mark makes neither an operator nor a key.
            "a.@\u{301}count", "a.\u{301}b", "a\u{301}", "ké", "a.\u{212A}",
        ])
    func invalidKeyPaths(text: String) {
        #expect(throws: CoreError.self) { try KeyPath(text) }
        do { _ = try KeyPath(text) } catch { #expect(error.code == .invalidKeyPath) }
    }

    @Test(
        "suggestions find close names and nothing for distant ones",
        arguments: [
            ("nmae", ["name", "balance"], "name"), ("balanse", ["name", "balance"], "balance"),
            ("fulName", ["fullName", "firstName"], "fullName"), ("zzz", ["name", "balance"], nil),
        ] as [(String, [String], String?)])
    func suggestions(word: String, candidates: [String], expected: String?) {
        #expect(Suggestion.closest(to: word, in: candidates) == expected)
    }

    @Test("fresh ids are 15 bytes (inline strings) in base 62, all different, every place drawn; tokens are hex")
    func randomIDs() {
        let ids = (0..<2000).map { _ in Command.newID("obs_") }
        #expect(Set(ids).count == ids.count)
        let base62 = Set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        for id in ids {
            #expect(id.hasPrefix("obs_") && id.utf8.count == 15)
            #expect(id.dropFirst(4).allSatisfy(base62.contains))
        }
        // The first ten places take nearly every digit (the eleventh holds what 62^10 leaves
        // of a 64-bit draw: 0 to 21), and neighbouring places rarely agree (one in 62).
        for place in 0..<10 {
            #expect(Set(ids.map { Array($0.dropFirst(4))[place] }).count > 55)
        }
        #expect(Set(ids.map { Array($0.dropFirst(4))[10] }).count > 20)
        let agreeing = ids.filter { Array($0.dropFirst(4))[0] == Array($0.dropFirst(4))[1] }
        #expect(agreeing.count < 80)
        let hex = Set("0123456789abcdef")
        let token = Command.newToken()
        #expect(token.count == 48 && token.allSatisfy(hex.contains))
        #expect(Set(token).count > 4)
    }
}
