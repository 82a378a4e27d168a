import Logging
import ObservationCore

#if canImport(Glibc)
    import Glibc
#endif

/// How the server writes its log lines (`--log-format`).
enum LogFormat: String, Sendable, CaseIterable {
    /// swift-log's own lines: `2025-01-01T12:00:00+0000 info obs-server: key=value message`.
    case text
    /// One JSON object per line, for a log collector (`JSONLogHandler`).
    case json
}

/// A `LogHandler` that writes each message as one JSON object on one line of standard error:
///
///     {"time":"2025-01-01T12:00:00.123Z","level":"info","message":"stopped","logger":"obs-server","node":"n1"}
///
/// `time` (UTC, milliseconds), `level`, `message` and `logger` (the logger's label) come first,
/// then the metadata as members of their own, sorted by name (the handler's, its provider's,
/// then the message's, a later one winning): `requestId`, `observer`, `node`, … A metadata key
/// that is one of the four fixed names is written with a `_` before it. Nested metadata become
/// JSON objects and arrays; every other value is a string.
///
/// Thread-safety: a value type like every `LogHandler`; lines written from several threads
/// never interleave (one write each, under one lock).
struct JSONLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel = Logger.Level.info
    private let label: String
    private let output: @Sendable ([UInt8]) -> Void

    /// A handler writing to `output` (standard error by default; tests collect the lines).
    init(label: String, output: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.output = output
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields = metadata
        if let provided = metadataProvider?.get() { fields.merge(provided) { _, new in new } }
        if let own = event.metadata { fields.merge(own) { _, new in new } }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        output(Self.line(time: now, level: event.level, message: "\(event.message)", label: label, metadata: fields))
    }

    /// One log line, newline included.
    static func line(time: timespec, level: Logger.Level, message: String, label: String, metadata: Logger.Metadata)
        -> [UInt8]
    {
        var bytes = JSONWriter.encode { writer in
            writer.raw("{")
            writer.key("time")
            writer.write(timestamp(time))
            writer.raw(",")
            writer.key("level")
            writer.write(level.rawValue)
            writer.raw(",")
            writer.key("message")
            writer.write(message)
            writer.raw(",")
            writer.key("logger")
            writer.write(label)
            for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
                writer.raw(",")
                writer.key(fixedNames.contains(key) ? "_" + key : key)
                write(value, to: &writer)
            }
            writer.raw("}")
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    private static let fixedNames: Set = ["time", "level", "message", "logger"]

    private static func write(_ value: Logger.MetadataValue, to writer: inout JSONWriter) {
        switch value {
        case .string(let text): writer.write(text)
        case .stringConvertible(let convertible): writer.write(convertible.description)
        case .array(let elements):
            writer.raw("[")
            for (offset, element) in elements.enumerated() {
                if offset > 0 { writer.raw(",") }
                write(element, to: &writer)
            }
            writer.raw("]")
        case .dictionary(let members):
            writer.raw("{")
            for (offset, (key, member)) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                if offset > 0 { writer.raw(",") }
                writer.key(key)
                write(member, to: &writer)
            }
            writer.raw("}")
        }
    }

    /// `2025-01-01T12:00:00.123Z`: RFC 3339 in UTC, to the millisecond.
    static func timestamp(_ time: timespec) -> String {
        var seconds = time.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(digits(parts.tm_year + 1900, 4))-\(digits(parts.tm_mon + 1, 2))-\(digits(parts.tm_mday, 2))T"
            + "\(digits(parts.tm_hour, 2)):\(digits(parts.tm_min, 2)):\(digits(parts.tm_sec, 2))."
            + "\(digits(Int32(time.tv_nsec / 1_000_000), 3))Z"
    }

    /// Lines from several threads must not interleave: one `write` each, under this lock.
    private static let standardErrorLock = Locked(())

    /// Writes `line` to standard error whole (retrying short writes).
    @Sendable static func standardError(_ line: [UInt8]) {
        standardErrorLock.withLock { _ in
            line.withUnsafeBytes { bytes in
                guard let start = bytes.baseAddress else { return }
                var offset = 0
                while offset < bytes.count {
                    let written = Glibc.write(STDERR_FILENO, start + offset, bytes.count - offset)
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { return }
                    offset += written
                }
            }
        }
    }
}
