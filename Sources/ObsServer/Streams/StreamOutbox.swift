import ObservationCore

/// How a stream frames its events (section 7.2): Server-Sent Events, or one JSON object per line.
enum StreamFraming: Sendable {
    case sse
    case ndjson
}

/// What a stream has taken to send but not yet handed to its connection, framed.
///
/// An event's data is not copied here: the outbox holds the event itself (its bytes are
/// shared with the log and with every other stream sending it) and copies them straight
/// into the connection's buffer, framed as `id: n` (when it has one), `event: name`,
/// `data: json` and a blank line (SSE), or as `{"id":n,"event":"name","data":json}` and a
/// newline (NDJSON). A stream's own memory is the small header of the frame it is
/// writing, whatever the size of the events; but for the admin stream's `valueChanged`,
/// which the log keeps unencoded (`Event.materialized`): each stream encodes its own copy.
struct StreamOutbox {
    private enum Frame {
        case event(Event)
        case text([UInt8])

        /// An event with an id (a delivery, not `synced` or `progress`).
        var isLiveEvent: Bool {
            if case .event(let event) = self { event.id > 0 } else { false }
        }
    }

    private enum Part { case header, data, trailer }

    private var frames: [Frame] = []
    private var index = 0
    private var part = Part.header
    private var offset = 0
    /// The current event's `id:`/`event:`/`data: ` lines when they do not go straight into
    /// the connection's buffer (`framedInPlace`); kept for reuse.
    private var header: [UInt8] = []
    private let framing: StreamFraming

    init(framing: StreamFraming = .sse) {
        self.framing = framing
    }

    /// The frame storage a stream keeps once all is sent (see `write`).
    private static let keptFrames = 4

    private static let sseTrailer = Array("\n\n".utf8)
    private static let ndjsonTrailer = Array("}\n".utf8)

    var isEmpty: Bool { index == frames.count }

    /// Frames from this one on may hold deferred events (`appendUnencoded`).
    private var unencodedFrom: Int?

    /// An event to send; a deferred one (the admin stream's `valueChanged`) is encoded here, once.
    mutating func append(_ event: Event) { frames.append(.event(event.materialized)) }

    /// An event to send as the log holds it: appended under the log's lock, where encoding a
    /// deferred one would hold every writer up. `encodeDeferred()` must follow, before writing.
    mutating func appendUnencoded(_ event: Event) {
        if event.isDeferred, unencodedFrom == nil { unencodedFrom = frames.count }
        frames.append(.event(event))
    }

    /// Encodes the deferred events `appendUnencoded` took, once each.
    mutating func encodeDeferred() {
        guard let start = unencodedFrom else { return }
        unencodedFrom = nil
        for position in start..<frames.count {
            if case .event(let event) = frames[position], event.isDeferred {
                frames[position] = .event(event.materialized)
            }
        }
    }

    /// Raw text, such as a `: comment` (it must end with a blank line).
    mutating func append(text: [UInt8]) { frames.append(.text(text)) }

    /// Copies as much as fits into `buffer`; returns the bytes written.
    mutating func write(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        var written = 0
        while written < buffer.count, index < frames.count {
            if let framed = framedInPlace(into: buffer, at: written) {
                written += framed
                continue
            }
            let piece = currentPiece()
            let count = min(piece.count - offset, buffer.count - written)
            piece.withUnsafeBytes { bytes in
                UnsafeMutableRawBufferPointer(rebasing: buffer[written..<written + count])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))
            }
            written += count
            offset += count
            if offset == piece.count { nextPiece() }
        }
        if index == frames.count, index > 0 {
            // All sent: a live stream's few events keep their storage for the next delivery (an
            // allocation and a release less each); a replay's many, and an opening's or a
            // heartbeat's text, let theirs go (an idle stream keeps none).
            if frames.capacity <= Self.keptFrames, frames.allSatisfy({ $0.isLiveEvent }) {
                while frames.popLast() != nil {}
            } else {
                frames = []
            }
            index = 0
            unencodedFrom = nil
        }
        return written
    }

    /// Writes an SSE event's header lines straight into the connection's buffer when they fit
    /// (nearly always), and its data and blank line after them when those fit too: no copy, and
    /// no header buffer for the stream to keep. Returns the bytes written, or nil to take the
    /// header buffer (NDJSON, or a buffer nearly full).
    private mutating func framedInPlace(into buffer: UnsafeMutableRawBufferPointer, at start: Int) -> Int? {
        guard framing == .sse, part == .header, offset == 0, case .event(let event) = frames[index] else { return nil }
        let digits = event.id > 0 ? Self.decimalDigits(event.id) : 0
        let length = (digits > 0 ? 5 + digits : 0) + 7 + event.name.utf8.count + 7
        guard buffer.count - start >= length, let base = buffer.baseAddress else { return nil }
        // Plain pointer steps, no nested function: one capturing `cursor` costs a run-time
        // exclusivity check per call.
        var cursor = base + start
        if digits > 0 {
            cursor = Self.put("id: ", at: cursor)
            var rest = event.id  // the digits from the last
            for place in stride(from: digits - 1, through: 0, by: -1) {
                cursor.storeBytes(of: UInt8(ascii: "0") + UInt8(rest % 10), toByteOffset: place, as: UInt8.self)
                rest /= 10
            }
            cursor.storeBytes(of: 0x0A, toByteOffset: digits, as: UInt8.self)
            cursor += digits + 1
        }
        cursor = Self.put("event: ", at: cursor)
        // A native string's bytes are contiguous.
        let name = event.name.utf8
        if let end = name.withContiguousStorageIfAvailable({ Self.put(UnsafeRawBufferPointer($0), at: cursor) }) {
            cursor = end
        } else {
            cursor = Array(name).withUnsafeBytes { Self.put($0, at: cursor) }
        }
        cursor = Self.put("\ndata: ", at: cursor)
        assert(cursor - (base + start) == length)
        // The data and the blank line too when they fit (nearly always): the frame in one pass.
        guard let count = event.encodedCount, buffer.count - start - length >= count + 2 else {
            part = .data
            return length
        }
        cursor = event.copyEncoded(to: cursor)
        cursor.storeBytes(of: 0x0A, as: UInt8.self)
        cursor.storeBytes(of: 0x0A, toByteOffset: 1, as: UInt8.self)
        index += 1
        return length + count + 2
    }

    /// Copies `bytes` to `cursor`; returns where they end.
    private static func put(_ bytes: UnsafeRawBufferPointer, at cursor: UnsafeMutableRawPointer)
        -> UnsafeMutableRawPointer
    {
        guard let from = bytes.baseAddress else { return cursor }
        cursor.copyMemory(from: from, byteCount: bytes.count)
        return cursor + bytes.count
    }

    private static func put(_ text: StaticString, at cursor: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        put(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount), at: cursor)
    }

    private static func decimalDigits(_ number: Int) -> Int {
        var digits = 1
        var rest = number
        while rest >= 10 {
            rest /= 10
            digits += 1
        }
        return digits
    }

    private mutating func currentPiece() -> [UInt8] {
        switch frames[index] {
        case .text(let text):
            return text
        case .event(let event):
            switch part {
            case .header:
                if offset == 0 { frameHeader(event, into: &header) }
                return header
            case .data: return event.data
            case .trailer: return framing == .sse ? Self.sseTrailer : Self.ndjsonTrailer
            }
        }
    }

    private mutating func nextPiece() {
        offset = 0
        switch (frames[index], part) {
        case (.event, .header): part = .data
        case (.event, .data): part = .trailer
        default:
            part = .header
            index += 1
        }
    }

    /// SSE: `id: n\n` (when the event has one), `event: name\n`, `data: `. NDJSON:
    /// `{"id":n,` (when it has one), `"event":"name","data":`.
    private func frameHeader(_ event: Event, into bytes: inout [UInt8]) {
        bytes.removeAll(keepingCapacity: true)
        if framing == .ndjson {
            event.appendJSONHead(to: &bytes)
            return
        }
        if event.id > 0 {
            bytes.append(contentsOf: "id: ".utf8)
            JSONWriter.appendDecimal(event.id, to: &bytes)
            bytes.append(0x0A)
        }
        bytes.append(contentsOf: "event: ".utf8)
        bytes.append(contentsOf: event.name.utf8)
        bytes.append(contentsOf: "\ndata: ".utf8)
    }
}
