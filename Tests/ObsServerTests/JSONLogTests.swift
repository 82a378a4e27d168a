import Glibc
import Logging
import ObservationCore
import Testing

@testable import ObsServer

@Suite("JSON log lines")
struct JSONLogTests {
    /// 2025-01-01T12:00:00.123456789Z.
    private let noon = timespec(tv_sec: 1_735_732_800, tv_nsec: 123_456_789)

    private func parsed(_ line: [UInt8]) throws -> JSONObject {
        #expect(line.last == UInt8(ascii: "\n"))
        #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false, "one line")
        guard case .object(let members) = try JSONParser.parse(line.dropLast()) else {
            Issue.record("not a JSON object: \(String(decoding: line, as: UTF8.self))")
            return JSONObject()
        }
        return members
    }

    @Test("a line is one JSON object: time, level, message, logger, then the metadata by name")
    func lineFormat() throws {
        let line = JSONLogHandler.line(
            time: noon, level: .warning, message: "two\nlines \"quoted\"", label: "obs-server",
            metadata: ["requestId": "r-1", "node": "n1", "observer": "obs_7"])
        let text = String(decoding: line, as: UTF8.self)
        #expect(
            text == #"{"time":"2025-01-01T12:00:00.123Z","level":"warning","message":"two\nlines \"quoted\"","#
                + #""logger":"obs-server","node":"n1","observer":"obs_7","requestId":"r-1"}"# + "\n")
        let members = try parsed(line)
        #expect(members["message"] == "two\nlines \"quoted\"")
    }

    @Test("nested metadata become objects and arrays; a fixed name in the metadata gets a _ before it")
    func nestedAndReserved() throws {
        let line = JSONLogHandler.line(
            time: noon, level: .info, message: "m", label: "l",
            metadata: [
                "message": "not the message", "limits": ["bytes": "10", "list": ["a", "b"]], "count": "\(3)",
            ])
        let members = try parsed(line)
        #expect(members["message"] == "m")
        #expect(members["_message"] == "not the message")
        #expect(members["limits"] == ["bytes": "10", "list": ["a", "b"]])
        #expect(members["count"] == "3")
    }

    @Test(
        "the time is UTC to the millisecond",
        arguments: [
            (0, 0, "1970-01-01T00:00:00.000Z"), (951_782_399, 999_999_999, "2000-02-28T23:59:59.999Z"),
            (951_868_800, 5_000_000, "2000-03-01T00:00:00.005Z"),
        ])
    func timestamps(seconds: Int, nanoseconds: Int, expected: String) {
        #expect(JSONLogHandler.timestamp(timespec(tv_sec: seconds, tv_nsec: nanoseconds)) == expected)
    }

    @Test("through a Logger: the handler's, then the message's metadata, at the handler's level")
    func throughLogger() throws {
        let lines = Locked<[[UInt8]]>([])
        var logger = Logger(label: "obs-server") { label in
            var handler = JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
            handler.logLevel = .info
            return handler
        }
        logger[metadataKey: "node"] = "n1"
        logger.debug("not written")
        logger.info("written", metadata: ["requestId": "abc", "node": "n2"])
        let written = lines.withLock { $0 }
        try #require(written.count == 1)
        let members = try parsed(written[0])
        #expect(members["message"] == "written")
        #expect(members["level"] == "info")
        #expect(members["logger"] == "obs-server")
        #expect(members["requestId"] == "abc")
        #expect(members["node"] == "n2", "the message's own metadata wins")
        guard case .string(let time)? = members["time"] else { throw CancellationError() }
        #expect(time.hasSuffix("Z") && time.count == 24)
    }

    @Test("--log-format and OBS_LOG_FORMAT choose text or json")
    func flag() throws {
        #expect(try ObsServerCommand.parse([]).makeConfig(environment: [:]).logFormat == .text)
        #expect(try ObsServerCommand.parse(["--log-format", "json"]).makeConfig(environment: [:]).logFormat == .json)
        #expect(try ObsServerCommand.parse([]).makeConfig(environment: ["OBS_LOG_FORMAT": "json"]).logFormat == .json)
        #expect(throws: (any Error).self) {
            try ObsServerCommand.parse(["--log-format", "xml"]).makeConfig(environment: [:])
        }
    }
}
