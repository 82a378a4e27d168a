import Testing

@testable import ObservationCore

/// Throttled registrations (section 7.3), at exact command times: at most one record per
/// window, whether the window's end is flushed before the next change or not.
@Suite("Throttling")
struct ThrottleTests {
    let store = Store()
    let base = Timestamp.now().milliseconds + 60_000
    var observer = ""

    init() throws {
        _ = try store.as(.admin).defineClass(
            "Account", definition: ["properties": ["balance": ["type": "number", "notify": "manual"]]])
        _ = try store.as(.admin).createObject(id: "a", className: nil, values: ["n": 0])
        _ = try store.as(.admin).createObject(id: "acct", className: "Account", values: ["balance": 0])
        observer = try store.as(.admin).createObserver(ObserverSettings(client: "tab0")).observer.id
    }

    func run(_ at: Int64, _ action: Command.Action, by: String? = nil) throws {
        _ = try store.execute(
            Command(
                time: Timestamp(milliseconds: base + at), action, as: action.isBackground ? .server : .admin, by: by))
    }

    func set(_ value: Int, at: Int64, by: String? = nil) throws {
        try run(at, .setValue(object: "a", keyPath: "n", value: .int(value), ifRevision: nil), by: by)
    }

    func observe(_ object: String, _ keyPath: String, _ options: [String], throttle: Int) throws {
        try run(
            0,
            .observe(
                observer: observer, object: object, keyPaths: [keyPath], options: options, context: nil,
                registrationIDs: ["reg_\(object)"], throttle: throttle))
    }

    /// The (old, new) of each record the observer got so far.
    func records() throws -> [String] {
        let log = try store.eventLog(of: observer)
        guard case .events(let events) = log.read(after: 0, limit: 1_000) else { return [] }
        return events.map { event in
            guard case .object(let record)? = try? JSONParser.parse(event.data) else { return "?" }
            return "\(record["old"].map { "\($0)" } ?? "-")→\(record["new"].map { "\($0)" } ?? "-")"
        }
    }

    @Test("a change after the window ended but before its flush goes out with the folded ones, as one record")
    func windowEndedBeforeItsFlush() throws {
        try observe("a", "n", ["old", "new"], throttle: 100)
        try set(1, at: 10)  // at once; the window runs to 110
        try set(2, at: 50)  // folded
        try set(3, at: 150)  // the window has ended, its flush not applied yet
        try run(160, .flushThrottled)
        #expect(try records() == ["0→1", "1→3"])
        try run(400, .flushThrottled)
        #expect(try records() == ["0→1", "1→3"], "nothing sent twice")
    }

    @Test(
        "a folded record carries the fields its options ask for, no more",
        arguments: [(["new"], "-→3"), (["old"], "1→-"), ([], "-→-")] as [([String], String)])
    func foldedRecordFields(options: [String], folded: String) throws {
        try observe("a", "n", options, throttle: 100)
        try set(1, at: 10)  // at once; the window runs to 110
        try set(2, at: 50)  // folded
        try set(3, at: 60)  // folded
        try run(110, .flushThrottled)
        #expect(try records().last == folded)
        #expect(try records().count == 2)
    }

    @Test("the observer's own echo opens no window: another client's change right after goes out at once")
    func ownEchoOpensNoWindow() throws {
        try observe("a", "n", ["old", "new", "skipOwn"], throttle: 1_000)
        try set(1, at: 10, by: "tab0")
        try set(2, at: 20, by: "tab1")
        #expect(try records() == ["1→2"])
    }

    @Test("manual notifications of a throttled registration wait for its window too")
    func manualNotifyIsThrottled() throws {
        try observe("acct", "balance", ["old", "new"], throttle: 1_000)
        try run(10, .setValue(object: "acct", keyPath: "balance", value: 1, ifRevision: nil))
        try run(20, .notify(object: "acct", keyPaths: ["balance"]))  // at once
        try run(30, .setValue(object: "acct", keyPath: "balance", value: 2, ifRevision: nil))
        try run(40, .notify(object: "acct", keyPaths: ["balance"]))  // inside the window: folded
        #expect(try records() == ["0→1"])
        try run(1_100, .flushThrottled)
        #expect(try records() == ["0→1", "1→2"])
    }
}
