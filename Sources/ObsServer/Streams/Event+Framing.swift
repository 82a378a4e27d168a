import ObservationCore

extension Event {
    /// The `reset` that starts a resume whose point is gone (`gap`) or was never made (`unknown`),
    /// on a stream and in a poll's answer alike (section 7; no id).
    static func reset(reason: String, oldestAvailable: Int) -> Event {
        Event(
            id: 0, name: "reset",
            data: JSON.object(["reason": .string(reason), "oldestAvailable": .int(oldestAvailable)]).encoded())
    }

    /// The start of the event as a JSON object, up to its data: `{"id":n,"event":"name","data":`
    /// (no `id` member where SSE has no `id:` line). An NDJSON line and an element of a poll's
    /// `events` are this, the data, and `}`.
    func appendJSONHead(to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "{"))
        if id > 0 {
            bytes.append(contentsOf: "\"id\":".utf8)
            JSONWriter.appendDecimal(id, to: &bytes)
            bytes.append(UInt8(ascii: ","))
        }
        bytes.append(contentsOf: "\"event\":\"".utf8)
        bytes.append(contentsOf: name.utf8)  // event names are plain ASCII words
        bytes.append(contentsOf: "\",\"data\":".utf8)
    }
}
