import Foundation
import ObservationCore
import Testing

@testable import ObsServer

/// The verification time of every test: tokens are made for it, so no test depends on the clock.
private let now: Int64 = 1_700_000_000

/// Valid claims at `now`, with `changes` applied (a nil value removes the claim).
private func claims(_ changes: [String: JSON?] = [:]) -> JSON {
    var members: JSONObject = [
        "sub": "dashboard-1", "jti": "token.42", "exp": .int(Int(now) + 600), "nbf": .int(Int(now) - 60),
        "obs": ["scopes": ["read:objects", ["write": "a"]]],
    ]
    for (name, value) in changes { members[name] = value }
    return .object(members)
}

/// `token` with one bit of its signature's first (or last) byte flipped.
private func flippingSignature(_ token: String, last: Bool = false) -> String {
    let parts = token.split(separator: ".", omittingEmptySubsequences: false)
    var signature = Base64URL.decode(parts[2].utf8) ?? []
    signature[last ? signature.count - 1 : 0] ^= 0x01
    return "\(parts[0]).\(parts[1]).\(Base64URL.encode(signature))"
}

@Suite("JWTVerifier (section 13)")
struct JWTVerifierTests {
    @Test("each algorithm accepts a token signed with its key and returns the claims", arguments: JWTAlgorithms.all)
    func accepts(algorithm: String) throws {
        let signer = try JWTTestKeys.signer(algorithm)
        let verifier = try signer.verifier()
        #expect(verifier.algorithm == algorithm)
        let expected = JWTClaims(
            id: "token.42", subject: "dashboard-1", expiresAt: now + 600, notBefore: now - 60,
            scopes: ["read:objects", ["write": "a"]])
        #expect(verifier.verify(try signer.token(claims()), now: now) == .success(expected))
    }

    @Test("only exp is required; a fractional exp rounds up and nbf rounds down")
    func minimalClaims() throws {
        let signer = JWTTestKeys.hs256
        let verifier = try signer.verifier()
        let token = try signer.token(["exp": .double(Double(now) + 10.25), "nbf": .double(Double(now) - 0.5)])
        #expect(
            verifier.verify(token, now: now)
                == .success(JWTClaims(id: nil, subject: nil, expiresAt: now + 11, notBefore: now - 1, scopes: nil)))
        let withoutScopes = try signer.token(["exp": .int(Int(now) + 1), "obs": [:]])
        #expect(try verifier.verify(withoutScopes, now: now).get().scopes == nil)
    }

    @Test("a flipped bit in the first or last signature byte is a bad signature", arguments: JWTAlgorithms.all)
    func badSignature(algorithm: String) throws {
        let signer = try JWTTestKeys.signer(algorithm)
        let token = try signer.token(claims())
        let verifier = try signer.verifier()
        #expect(verifier.verify(flippingSignature(token), now: now) == .failure(.badSignature))
        #expect(verifier.verify(flippingSignature(token, last: true), now: now) == .failure(.badSignature))
    }

    @Test("a changed payload no longer matches its signature", arguments: JWTAlgorithms.all)
    func changedPayload(algorithm: String) throws {
        let signer = try JWTTestKeys.signer(algorithm)
        let parts = try signer.token(claims()).split(separator: ".")
        let forged = Base64URL.encode(claims(["sub": "admin"]).encoded())
        #expect(try signer.verifier().verify("\(parts[0]).\(forged).\(parts[2])", now: now) == .failure(.badSignature))
    }

    @Test("an ES256 signature of other than 64 bytes is refused")
    func es256SignatureLength() throws {
        let signer = try JWTTestKeys.signer("ES256")
        let parts = try signer.token(claims()).split(separator: ".")
        let signature = Base64URL.decode(parts[2].utf8) ?? []
        let verifier = try signer.verifier()
        for wrong in [Array(signature.prefix(63)), signature + [0], []] {
            let token = "\(parts[0]).\(parts[1]).\(Base64URL.encode(wrong))"
            #expect(verifier.verify(token, now: now) == .failure(.badSignature))
        }
    }

    @Test("a token for another algorithm is refused, whatever its signature")
    func otherAlgorithm() throws {
        let rsaToken = try JWTTestKeys.signer("RS256").token(claims())
        #expect(
            try JWTTestKeys.signer("ES256").verifier().verify(rsaToken, now: now) == .failure(.wrongAlgorithm("RS256")))
        let edToken = try JWTTestKeys.signer("EdDSA").token(claims())
        #expect(try JWTTestKeys.hs256.verifier().verify(edToken, now: now) == .failure(.wrongAlgorithm("EdDSA")))
        // The alg is compared exactly: another spelling of the verifier's own is still another.
        let lowercase = try JWTTestKeys.hs256.token(claims(), alg: "hs256")
        #expect(try JWTTestKeys.hs256.verifier().verify(lowercase, now: now) == .failure(.wrongAlgorithm("hs256")))
    }

    @Test("alg none is refused by every verifier", arguments: JWTAlgorithms.all)
    func algNone(algorithm: String) throws {
        let header = Base64URL.encode((["alg": "none", "typ": "JWT"] as JSON).encoded())
        let payload = Base64URL.encode(claims().encoded())
        let verifier = try JWTTestKeys.signer(algorithm).verifier()
        #expect(verifier.verify("\(header).\(payload).", now: now) == .failure(.wrongAlgorithm("none")))
        #expect(verifier.verify("\(header).\(payload).AAAA", now: now) == .failure(.wrongAlgorithm("none")))
    }

    @Test("an HS256 token keyed with the RSA public key is refused by the RSA verifier (algorithm confusion)")
    func algorithmConfusion() throws {
        let publicPEM = try #require(try JWTTestKeys.signer("RS256").publicPEM)
        let forger = JWTSigner(secret: publicPEM)
        let token = try forger.token(claims())
        // The forgery is well made: a verifier that did take HS256 with that secret would accept it.
        #expect(try forger.verifier().verify(token, now: now).get().subject == "dashboard-1")
        #expect(
            try JWTTestKeys.signer("RS256").verifier().verify(token, now: now) == .failure(.wrongAlgorithm("HS256")))
    }

    @Test("the header: alg must be a string, typ JWT in any case, and crit is refused")
    func header() throws {
        let signer = JWTTestKeys.hs256
        let verifier = try signer.verifier()
        let payload = claims()
        #expect(verifier.verify(try signer.token(payload, header: ["alg": "HS256"]), now: now).isSuccess)
        #expect(verifier.verify(try signer.token(payload, header: ["alg": "HS256", "typ": "jwt"]), now: now).isSuccess)
        for header: JSON in [
            ["typ": "JWT"], ["alg": 256], ["alg": "HS256", "typ": "JWS"], ["alg": "HS256", "typ": 1],
            ["alg": "HS256", "crit": ["exp"]], ["HS256"],
        ] {
            let refusal = verifier.verify(try signer.token(payload, header: header), now: now).refusal
            #expect(refusal?.reason == "malformed", "\(header)")
        }
    }

    @Test("exp is required, must be ahead of now and at most 24 hours ahead")
    func expiry() throws {
        let signer = JWTTestKeys.hs256
        let verifier = try signer.verifier()
        func verify(_ changes: [String: JSON?]) throws -> Result<JWTClaims, JWTRefusal> {
            verifier.verify(try signer.token(claims(changes)), now: now)
        }
        #expect(try verify(["exp": nil]) == .failure(.missingExpiry))
        #expect(try verify(["exp": .int(Int(now) - 1)]) == .failure(.expired))
        #expect(try verify(["exp": .int(Int(now))]) == .failure(.expired))
        #expect(try verify(["exp": .int(Int(now) + 1)]).isSuccess)
        #expect(try verify(["exp": .int(Int(now) + 86400)]).isSuccess)
        #expect(try verify(["exp": .int(Int(now) + 86401)]) == .failure(.expiresTooLate))
        #expect(try verify(["exp": .double(Double(now) + 86400.5)]) == .failure(.expiresTooLate))
        #expect(try verify(["exp": .double(1e300)]).refusal?.reason == "malformed")
        #expect(try verify(["exp": .string("\(now + 600)")]).refusal?.reason == "malformed")
        #expect(try verify(["exp": .null]).refusal?.reason == "malformed")
    }

    @Test("nbf in the future is refused, with no leeway")
    func notBefore() throws {
        let signer = JWTTestKeys.hs256
        let verifier = try signer.verifier()
        #expect(
            verifier.verify(try signer.token(claims(["nbf": .int(Int(now) + 1)])), now: now) == .failure(.notYetValid))
        #expect(verifier.verify(try signer.token(claims(["nbf": .int(Int(now))])), now: now).isSuccess)
        #expect(verifier.verify(try signer.token(claims(["nbf": "soon"])), now: now).refusal?.reason == "malformed")
    }

    @Test("tokens that are not three unpadded base64url parts are malformed")
    func malformedText() throws {
        let verifier = try JWTTestKeys.hs256.verifier()
        let parts = try JWTTestKeys.hs256.token(claims()).split(separator: ".").map(String.init)
        for token in [
            "\(parts[0]).\(parts[1])", "\(parts[0]).\(parts[1]).\(parts[2]).\(parts[2])", "",
            "\(parts[0]).\(parts[1]).\(parts[2])=", "\(parts[0])!.\(parts[1]).\(parts[2])",
            "\(parts[0]).\(parts[1]) .\(parts[2])", ".\(parts[1]).\(parts[2])",
            "\(parts[0]).\(parts[1]).\(parts[2])" + String(repeating: "A", count: JWTVerifier.maxTokenBytes),
        ] {
            #expect(verifier.verify(token, now: now).refusal?.reason == "malformed", "\(token.prefix(40))")
        }
        #expect(verifier.verify(parts.joined(separator: "."), now: now).isSuccess)
    }

    @Test("a signed payload that is not an object, or has claims of the wrong form, is malformed")
    func malformedClaims() throws {
        let signer = JWTTestKeys.hs256
        let verifier = try signer.verifier()
        for payload: JSON in [
            ["exp", 1], "exp", claims(["sub": 42]), claims(["sub": ""]), claims(["sub": "a/b"]),
            claims(["sub": .string(String(repeating: "s", count: 129))]), claims(["jti": "id with space"]),
            claims(["jti": ["x"]]), claims(["obs": ["scopes"]]), claims(["obs": "read"]),
        ] {
            #expect(verifier.verify(try signer.token(payload), now: now).refusal?.reason == "malformed", "\(payload)")
        }
        let longest = String(repeating: "A", count: 128)
        #expect(try verifier.verify(signer.token(claims(["sub": .string(longest)])), now: now).get().subject == longest)
        let notJSON = "\(Base64URL.encode((["alg": "HS256"] as JSON).encoded())).\(Base64URL.encode(Array("{".utf8)))"
        let token = "\(notJSON).\(Base64URL.encode(try signer.sign(Array(notJSON.utf8))))"
        #expect(verifier.verify(token, now: now) == .failure(.malformed("the payload is not a JSON object")))
    }

    @Test("keys other than RSA 2048+, EC P-256 and Ed25519 throw at init")
    func unsupportedKeys() throws {
        for (options, mentions) in [
            (["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384"], "secp384r1"),
            (["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"], "2048"),
            (["-algorithm", "X25519"], "X25519"),
        ] {
            let publicPEM = try #require(try JWTSigner(algorithm: "-", genpkey: options).publicPEM)
            let error = #expect(throws: JWTKeyError.self) { try JWTVerifier(publicKeyPEM: publicPEM) }
            #expect(error?.message.contains(mentions) == true, "\(error?.message ?? "")")
        }
        #expect(throws: JWTKeyError.self) { try JWTVerifier(publicKeyPEM: "not a key") }
        #expect(throws: JWTKeyError.self) { try JWTVerifier(publicKeyPEM: "") }
    }

    @Test("looksLikeJWT: three nonempty base64url parts, never an opaque hex token")
    func looksLikeJWT() throws {
        #expect(JWTVerifier.looksLikeJWT(try JWTTestKeys.hs256.token(claims())))
        #expect(JWTVerifier.looksLikeJWT("a.b.c"))
        for token in ["", "0123456789abcdef0123456789abcdef", "a.b", "a..c", "a.b.", "a.b.c.d", "a.b.c=", "a.b+.c"] {
            #expect(!JWTVerifier.looksLikeJWT(token), "\(token)")
        }
    }

    @Test("concurrent verifications with one key all succeed", arguments: ["RS256", "ES256", "EdDSA"])
    func concurrentVerify(algorithm: String) async throws {
        let signer = try JWTTestKeys.signer(algorithm)
        let verifier = try signer.verifier()
        let good = try signer.token(claims())
        let bad = flippingSignature(good)
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<200 {
                group.addTask {
                    index.isMultiple(of: 2)
                        ? verifier.verify(good, now: now).isSuccess
                        : verifier.verify(bad, now: now) == .failure(.badSignature)
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 200 && results.allSatisfy { $0 })
    }

    @Test("base64url: unpadded and canonical only")
    func base64URL() {
        #expect(Base64URL.decode("QQ".utf8) == [0x41])
        #expect(Base64URL.decode("-_8".utf8) == [0xFB, 0xFF])
        #expect(Base64URL.decode("".utf8) == [])
        for text in ["Q", "QR", "QQ==", "QQ=", "+/8", "QQ Q"] {
            #expect(Base64URL.decode(text.utf8) == nil, "\(text)")
        }
        let bytes = (0...255).map { UInt8($0) }
        #expect(Base64URL.decode(Base64URL.encode(bytes).utf8) == bytes)
    }
}

/// The four algorithms, as test arguments.
enum JWTAlgorithms {
    static let all = ["HS256", "RS256", "ES256", "EdDSA"]
}

extension Result where Failure == JWTRefusal {
    fileprivate var isSuccess: Bool { (try? get()) != nil }
    fileprivate var refusal: JWTRefusal? {
        if case .failure(let refusal) = self { return refusal }
        return nil
    }
}
