import Foundation
import Testing

@testable import ObservationCore

/// Applying a command is a pure function of (state, command): two processes that apply the
/// same commands (with different hash seeds: Swift randomises them per process) produce the
/// same answers, the same event ids and the same event bytes. That is what lets the nodes of a
/// cluster replay one command log and let a client resume on any of them.
@Suite("Determinism: the same commands give the same answers and events everywhere")
struct DeterminismTests {
    /// `OBS_DETERMINISM_COMMANDS` sets the count (make test: the default).
    static var count: Int { Int(ProcessInfo.processInfo.environment["OBS_DETERMINISM_COMMANDS"] ?? "") ?? 4_000 }

    @Test("two processes, different hash seeds: identical digests of every answer and event", arguments: [7, 1234])
    func twoProcesses(seed: UInt64) throws {
        var generator = CommandGenerator(seed: seed)
        let commands = generator.commands(Self.count)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("obs-commands-\(seed)-\(UUID()).jsonl")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(commands.map { Data($0.encoded() + [0x0A]) }.joined()).write(to: file)

        let fixed = try replay(file.path, hashing: "deterministic")
        let random = try replay(file.path, hashing: "random")
        #expect(fixed["digest"] == random["digest"], "the two processes disagree")
        #expect(fixed["commands"] == .int(commands.count))
        // Every kind of command was tried, and enough of them were refused and made events.
        guard case .object(let kinds)? = fixed["kinds"] else { throw ReplayFailure("no kinds in \(fixed)") }
        #expect(
            Set(kinds.keys) == Set(Self.allKinds),
            "kinds never generated: \(Set(Self.allKinds).subtracting(kinds.keys))")
        if case .int(let refused)? = fixed["refused"], case .int(let events)? = fixed["events"] {
            #expect(refused > commands.count / 20 && refused < commands.count / 2, "refused \(refused)")
            // Many commands make events (throttled registrations fold some of theirs; commands made
            // with tokens, owners and onRemove patches are refused more often than the admin's).
            #expect(events > commands.count / 2, "only \(events) events")
        }
        print("determinism (seed \(seed)): \(String(decoding: JSON.object(fixed).encoded(), as: UTF8.self))")
    }

    @Test("every command kind survives its encoding unchanged")
    func roundTrip() throws {
        var generator = CommandGenerator(seed: 99)
        let commands = generator.commands(2_000)
        for command in commands {
            #expect(try Command(decoding: command.encoded()) == command, "\(command.action.kind)")
        }
        let kinds = Set(commands.map(\.action.kind))
        #expect(kinds == Set(Self.allKinds))
        // Every kind of caller makes commands: the admin, the server, a token, a JWT, an observer's token.
        let callers = Set(
            commands.map { command -> String in
                switch command.principal {
                case .admin: "admin"
                case .server: "server"
                case .token: "token"
                case .jwt: "jwt"
                case .observer: "observer"
                case .nobody: "nobody"
                }
            })
        #expect(callers == ["admin", "server", "token", "jwt", "observer"], "\(callers)")
        #expect(throws: CommandDecodingError.self) {
            try Command(decoding: Array(#"{"v":2,"t":1,"a":"restart"}"#.utf8))
        }
        #expect(throws: CommandDecodingError.self) {
            try Command(decoding: Array(#"{"v":1,"t":1,"a":"explode"}"#.utf8))
        }
        #expect(throws: CommandDecodingError.self) {
            try Command(decoding: Array(#"{"v":1,"t":1,"a":"deleteClass"}"#.utf8))
        }
    }

    static let allKinds = [
        "defineClass", "deleteClass", "createObject", "patch", "deleteObject", "setValue", "mutate", "notify",
        "createObserver", "deleteObserver", "keepalive", "observe", "unobserve", "subscribe", "unsubscribe", "post",
        "expireLeases", "deliverQueued", "flushThrottled", "openStream", "closeStream", "restart", "nodeDown",
        "query", "unquery", "createToken", "changeToken", "revokeToken", "expireTokens", "transaction",
        "acknowledge",
    ]

    /// Runs `obs-server --replay file` in its own process; `hashing` deterministic or random seeds.
    private func replay(_ file: String, hashing: String) throws -> JSONObject {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("obs-server")
        process.arguments = ["--replay", file, "--max-registrations-per-observer", "12", "--max-streams", "40"]
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_DETERMINISTIC_HASHING"] = hashing == "deterministic" ? "1" : nil
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, case .object(let report) = try JSONParser.parse(Array(data)) else {
            throw ReplayFailure(
                "obs-server --replay exited \(process.terminationStatus): \(String(decoding: data, as: UTF8.self))")
        }
        return report
    }
}

struct ReplayFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
