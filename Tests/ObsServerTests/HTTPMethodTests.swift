import Testing

@testable import ObsServer

@Suite("HTTP methods: equal exactly when their names are")
struct HTTPMethodTests {
    @Test("known and other names compare and hash by name, however they were made")
    func equality() {
        let names = ["GET", "PUT", "POST", "DELETE", "HEAD", "PATCH", "OPTIONS", "get", "PROPFIND", "BREW", ""]
        for a in names {
            for b in names {
                let (x, y) = (HTTPMethod(rawValue: a), HTTPMethod(rawValue: b))
                #expect((x == y) == (a == b), "\(a) \(b)")
                if a == b { #expect(x.hashValue == y.hashValue) }
            }
        }
        #expect(HTTPMethod(rawValue: "PUT") == .put && HTTPMethod.get != .head)
        #expect("PUT".withCString { HTTPMethod(cString: $0) } == .put)
        #expect("BREW".withCString { HTTPMethod(cString: $0) } == HTTPMethod(rawValue: "BREW"))
    }
}
