import Foundation
import ObservationCore

@testable import ObsServer

/// Keys and signed JWTs for the verifier's tests, made with the `openssl` command: the tests never
/// sign in Swift, so a mistake in the verifier cannot cancel out a matching one in the signer.
struct JWTSigner: Sendable {
    /// The JWS `alg` this signer's tokens name by default.
    let algorithm: String
    /// The PEM public key to configure a verifier with (nil for HS256).
    let publicPEM: String?
    private let secret: Secret

    private enum Secret {
        case hmac([UInt8])
        case privateKey(pem: String)
    }

    /// An HS256 signer with `secret`.
    init(secret: String) {
        algorithm = "HS256"
        publicPEM = nil
        self.secret = .hmac(Array(secret.utf8))
    }

    /// A new key pair from `openssl genpkey` with `options` (such as `-algorithm ED25519`).
    init(algorithm: String, genpkey options: [String]) throws {
        self.algorithm = algorithm
        let (privatePEM, publicPEM) = try Self.inTemporaryDirectory { directory in
            try Self.openssl(["genpkey"] + options + ["-out", "key.pem"], in: directory)
            try Self.openssl(["pkey", "-in", "key.pem", "-pubout", "-out", "pub.pem"], in: directory)
            return try (
                String(contentsOf: directory.appending(path: "key.pem"), encoding: .utf8),
                String(contentsOf: directory.appending(path: "pub.pem"), encoding: .utf8)
            )
        }
        self.publicPEM = publicPEM
        secret = .privateKey(pem: privatePEM)
    }

    /// A verifier for this signer's key.
    func verifier() throws -> JWTVerifier {
        switch secret {
        case .hmac(let bytes): JWTVerifier(secret: String(decoding: bytes, as: UTF8.self))
        case .privateKey: try JWTVerifier(publicKeyPEM: publicPEM ?? "")
        }
    }

    /// A compact JWT of `payload`, with header `{"alg": alg ?? algorithm, "typ": "JWT"}` (or `header`).
    func token(_ payload: JSON, alg: String? = nil, header: JSON? = nil) throws -> String {
        let header = header ?? ["alg": .string(alg ?? algorithm), "typ": "JWT"]
        let input = Base64URL.encode(header.encoded()) + "." + Base64URL.encode(payload.encoded())
        return input + "." + Base64URL.encode(try sign(Array(input.utf8)))
    }

    /// The JWS signature of `input` with this signer's key.
    func sign(_ input: [UInt8]) throws -> [UInt8] {
        try Self.inTemporaryDirectory { directory in
            try Data(input).write(to: directory.appending(path: "input"))
            switch (secret, algorithm) {
            case (.hmac(let key), _):
                let hex = key.map { String(format: "%02x", $0) }.joined()
                try Self.openssl(
                    ["dgst", "-sha256", "-mac", "HMAC", "-macopt", "hexkey:\(hex)", "-binary", "-out", "sig", "input"],
                    in: directory)
            case (.privateKey(let pem), "EdDSA"):
                try pem.write(to: directory.appending(path: "key.pem"), atomically: false, encoding: .utf8)
                try Self.openssl(
                    ["pkeyutl", "-sign", "-rawin", "-inkey", "key.pem", "-in", "input", "-out", "sig"], in: directory)
            case (.privateKey(let pem), _):
                try pem.write(to: directory.appending(path: "key.pem"), atomically: false, encoding: .utf8)
                try Self.openssl(["dgst", "-sha256", "-sign", "key.pem", "-out", "sig", "input"], in: directory)
            }
            let signature = try [UInt8](Data(contentsOf: directory.appending(path: "sig")))
            return algorithm == "ES256" ? try Self.rawSignature(der: signature) : signature
        }
    }

    /// JWS's `r || s`, 32 bytes each, from the DER `SEQUENCE { INTEGER r, INTEGER s }` openssl writes.
    static func rawSignature(der: [UInt8]) throws -> [UInt8] {
        var index = 2
        guard der.count > 2, der[0] == 0x30, Int(der[1]) == der.count - 2 else { throw SignerError("not DER") }
        var raw: [UInt8] = []
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02 else { throw SignerError("no INTEGER") }
            let length = Int(der[index + 1])
            guard index + 2 + length <= der.count else { throw SignerError("short INTEGER") }
            let integer = der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 }
            guard integer.count <= 32 else { throw SignerError("INTEGER too long") }
            raw += [UInt8](repeating: 0, count: 32 - integer.count) + integer
            index += 2 + length
        }
        return raw
    }

    private static func openssl(_ arguments: [String], in directory: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = directory
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw SignerError(
                "openssl \(arguments.joined(separator: " ")): \(String(decoding: message, as: UTF8.self))")
        }
    }

    private static func inTemporaryDirectory<T>(_ body: (URL) throws -> T) throws -> T {
        let directory = FileManager.default.temporaryDirectory.appending(path: "jwt-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(at: directory) }
        return try body(directory)
    }
}

struct SignerError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}

/// The test keys, made once per test run (an RSA key takes a moment).
enum JWTTestKeys {
    static let hs256 = JWTSigner(secret: "a-test-secret-of-32-bytes-length")
    static let rs256 = Result {
        try JWTSigner(algorithm: "RS256", genpkey: ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"])
    }
    static let es256 = Result {
        try JWTSigner(algorithm: "ES256", genpkey: ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"])
    }
    static let eddsa = Result { try JWTSigner(algorithm: "EdDSA", genpkey: ["-algorithm", "ED25519"]) }

    /// The signer for `algorithm`.
    static func signer(_ algorithm: String) throws -> JWTSigner {
        switch algorithm {
        case "HS256": hs256
        case "RS256": try rs256.get()
        case "ES256": try es256.get()
        default: try eddsa.get()
        }
    }
}
