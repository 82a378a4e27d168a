import Testing

@testable import ObsServer
@testable import ObservationCore

/// A direct writer parks after its send without reading again only when the read said the
/// stream is drained (issue 46): whatever could make a next read find something must say no.
@Suite("Event streams: when a direct writer may park without reading again")
struct DirectReadTests {
    func liveStream(_ log: EventLog) -> EventStream {
        let stream = EventStream(
            log: log, cursor: 0, prelude: [], rebuild: nil, replayEnd: ReplayEnd(lastEventID: 0, revision: 0),
            options: StreamOptions(framing: .sse), hub: StreamHub(), revisions: NothingSettled(), onClose: {})
        stream.start(StreamControl(wake: {}, abort: {}))
        return stream
    }

    func append(_ log: EventLog, _ ids: ClosedRange<Int>, batch: Int) {
        for id in ids {
            _ = log.append(Event(id: id, name: "change", data: Array("{}".utf8), revision: batch), batch: batch)
        }
        _ = log.reveal()
    }

    /// One direct read into a buffer of `size` bytes: what it wrote (nil when it had nothing) and `drained`.
    func read(_ stream: EventStream, size: Int = 16 * 1024) -> (text: String?, drained: Bool) {
        var buffer = [UInt8](repeating: 0, count: size)
        let (read, drained) = buffer.withUnsafeMutableBytes { stream.readDirectly(into: $0) }
        if case .bytes(let count) = read { return (String(decoding: buffer.prefix(count), as: UTF8.self), drained) }
        return (nil, drained)
    }

    @Test("a live read that took every event the log shows is drained; the opening and an empty read are not")
    func drainedAfterEveryEvent() {
        let log = EventLog(label: "o", capacity: 1_000)
        let stream = liveStream(log)
        #expect(read(stream).drained == false, "the opening (retry:, synced) reads again")
        let nothing = read(stream)
        #expect(nothing.text == nil && nothing.drained == false, "nothing: the writer parks as before")
        append(log, 1...2, batch: 1)
        #expect(read(stream).drained == true)
        append(log, 3...3, batch: 2)
        #expect(read(stream).drained == true)
    }

    @Test("not drained while the log holds more than one read takes, nor after a heartbeat; a barrier goes along")
    func notDrainedWithMoreToSay() {
        let log = EventLog(label: "o", capacity: 1_000)
        let stream = liveStream(log)
        _ = read(stream)
        append(log, 1...300, batch: 1)  // a log read hands at most 256 events
        #expect(read(stream, size: 64 * 1024).drained == false)
        #expect(read(stream, size: 64 * 1024).drained == true, "the rest")
        stream.heartbeat()
        let heartbeat = read(stream)
        #expect(heartbeat.text == ": keep-alive\n\n" && heartbeat.drained == false, "its read took no event")
        append(log, 301...301, batch: 2)
        log.barrier(revision: 2).deliver()
        let passed = read(stream)
        #expect(passed.text?.contains("event: progress") == true && passed.drained, "sent with the event it follows")
    }

    @Test("a record kept as parts reads as the parts joined, copied in place the same")
    func recordParts() {
        let parts = RecordParts(prefix: Array("{\"a\":1,".utf8), tail: Array("\"b\":2".utf8), suffix: Array("}".utf8))
        let event = Event(id: 7, changeRecord: parts, revision: 3)
        #expect(event.data == Array("{\"a\":1,\"b\":2}".utf8))
        #expect(event.encodedCount == 13)
        var copied = [UInt8](repeating: 0, count: 13)
        copied.withUnsafeMutableBytes { buffer in
            let end = event.copyEncoded(to: buffer.baseAddress!)
            #expect(end - buffer.baseAddress! == 13)
        }
        #expect(copied == event.data)
        #expect(Event(id: 8, changeRecord: RecordParts(tail: [1, 2]), revision: 3).data == [1, 2])
    }
}

private final class NothingSettled: SettledRevisions {
    var settledRevision: Int { 0 }
}
