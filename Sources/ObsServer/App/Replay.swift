import Foundation
import ObservationCore

/// `obs-server --replay FILE`: applies the commands in FILE (one encoded command per line)
/// to an empty in-memory state and prints a digest of everything they produced: every answer
/// (status and body, as a client would get it) and every event (its log, id, name and bytes).
///
/// Two runs over the same commands must print the same digest, whatever the process (hash
/// seeds differ between processes): that is what replicas of a cluster rely on. The
/// determinism test runs it twice, in two processes.
enum Replay {
    struct Report: Sendable {
        var commands = 0
        var kinds: [String: Int] = [:]
        var refusedKinds: [String: Int] = [:]
        var refused = 0
        var events = 0
        var digest = ""

        var json: JSON {
            [
                "commands": .int(commands), "refused": .int(refused), "events": .int(events),
                "kinds": .object(JSONObject(kinds.keys.sorted().map { ($0, JSON.int(kinds[$0] ?? 0)) })),
                "refusedKinds": .object(
                    JSONObject(refusedKinds.keys.sorted().map { ($0, JSON.int(refusedKinds[$0] ?? 0)) })),
                "digest": .string(digest),
            ]
        }
    }

    static func run(file: String, limits: StoreLimits) throws -> Report {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigError("cannot read \(file)")
        }
        let store = Store(limits: limits, renderer: .http)
        var report = Report()
        var digested: [UInt8] = []
        for (number, line) in data.split(separator: UInt8(ascii: "\n")).enumerated() {
            let command: Command
            do {
                command = try Command(decoding: Array(line))
            } catch {
                throw ConfigError("\(file):\(number + 1): \(error)")
            }
            var made: [(log: String, event: Event)] = []
            let answer: HTTPResponse
            do {
                answer = .answer(try store.execute(command) { made = $0.madeEvents })
            } catch {
                answer = APIError(error).response
                report.refused += 1
                report.refusedKinds[command.action.kind, default: 0] += 1
            }
            report.commands += 1
            report.kinds[command.action.kind, default: 0] += 1
            report.events += made.count
            digested += Array("\(command.action.kind) \(answer.status) ".utf8) + answer.body + [0x0A]
            for (log, event) in made {
                digested += Array("\(log) \(event.id) \(event.name) ".utf8) + event.data + [0x0A]
            }
        }
        report.digest = TokenHash.hex(of: digested)
        return report
    }
}
