import Testing

@testable import ObsServer

@Suite("ASCII: header names compared in place")
struct ASCIITests {
    /// The rule, one byte at a time: an ASCII letter matches in either case, anything else only itself.
    private static func reference(_ bytes: [UInt8], _ lowercase: StaticString) -> Bool {
        let expected = Array(UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount))
        guard bytes.count == expected.count else { return false }
        return zip(bytes, expected).allSatisfy { byte, want in
            byte == want || ((UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) && byte | 0x20 == want)
        }
    }

    private static func check(_ text: [UInt8], _ lowercase: StaticString) -> Bool {
        text.withUnsafeBytes { ASCII.equalsLowercased($0, lowercase) }
    }

    @Test("names of every length the daemon reads, in any case, and nothing else")
    func names() {
        #expect(Self.check(Array("Content-Type".utf8), "content-type"))
        #expect(Self.check(Array("CONTENT-LENGTH".utf8), "content-length"))
        #expect(Self.check(Array("Access-Control-Request-Method".utf8), "access-control-request-method"))
        #expect(Self.check(Array("Origin".utf8), "origin"))
        #expect(Self.check(Array("x-request-id".utf8), "x-request-id"))
        #expect(!Self.check(Array("Content-Typf".utf8), "content-type"), "the last byte, in the overlapping word")
        #expect(!Self.check(Array("Content_Type".utf8), "content-type"))
        #expect(!Self.check(Array("content-type ".utf8), "content-type"))
        #expect(!Self.check(Array("X\rRequest-Id".utf8), "x-request-id"), "CR | 0x20 is `-`: not a letter")
        #expect(!Self.check(Array("Idempotency\u{0D}Key".utf8), "idempotency-key"))
        #expect(!Self.check([0xC3, 0xA9] + Array("tag-key".utf8), "xxetag-key"))
    }

    @Test("against the byte-by-byte rule, every byte changed in every position, lengths 1 to 29")
    func everyByte() {
        let patterns: [StaticString] = [
            "a", "accept", "origin", "obs-client", "content-type", "x-request-id", "authorization",
            "last-event-id", "content-length", "idempotency-key", "access-control-request-method", "a-b0/9;+z`{@[",
        ]
        var checked = 0
        for pattern in patterns {
            let base = Array(UnsafeBufferPointer(start: pattern.utf8Start, count: pattern.utf8CodeUnitCount))
            for position in base.indices {
                for byte in UInt8.min...UInt8.max {
                    var text = base
                    text[position] = byte
                    #expect(Self.check(text, pattern) == Self.reference(text, pattern), "\(text) against \(pattern)")
                    checked += 1
                }
            }
        }
        #expect(checked == 144 * 256, "every byte value in each of the 144 positions")
    }
}
