// MARK: - Idempotent retries (section 7.3)

/// A request's `Idempotency-Key`, carried by its command: the same key with the same
/// request within `IdempotencyTable.window` answers what the first answered and changes
/// nothing; with another request, `idempotencyKeyReused`.
public struct IdempotencyClaim: Sendable, Equatable {
    public let key: String
    /// What makes two requests the same: the SHA-256 (hex) of method, path, query and body.
    public let fingerprint: String
    /// Members the answer adds to what the outcome renders (a new observer's token: shown
    /// once, so a retry must get the same one; it is kept with the key for the window).
    public let answerMembers: JSONObject

    public init(key: String, fingerprint: String, answerMembers: JSONObject = [:]) {
        self.key = key
        self.fingerprint = fingerprint
        self.answerMembers = answerMembers
    }

    /// 1–128 printable ASCII characters.
    public static func isValidKey(_ key: String) -> Bool {
        (1...128).contains(key.utf8.count) && key.utf8.allSatisfy { (0x20...0x7E).contains($0) }
    }
}

/// An answer as the client got it: kept for an idempotent retry, which gets it byte for byte.
public struct StoredAnswer: Sendable, Equatable {
    public struct Header: Sendable, Equatable {
        public let name: String
        public let value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    public let status: Int
    public let contentType: String
    public let headers: [Header]
    public let body: [UInt8]

    public init(status: Int, contentType: String, headers: [Header], body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.headers = headers
        self.body = body
    }
}

/// How the server renders an outcome for its client, given to the store so that the answer
/// an idempotency key keeps is made where the command applies (in order, on every replica,
/// in every replay of the journal). It must be a pure function of its inputs.
public struct AnswerRenderer: Sendable {
    public let render: @Sendable (Outcome, JSONObject) -> StoredAnswer

    public init(_ render: @escaping @Sendable (Outcome, JSONObject) -> StoredAnswer) { self.render = render }

    /// Without a server (the core's own tests): the outcome's case name and the members.
    public static let plain = AnswerRenderer { outcome, members in
        var body = members
        body["outcome"] = .string(String("\(outcome)".prefix { $0 != "(" }))
        return StoredAnswer(
            status: 200, contentType: "application/json", headers: [], body: JSON.object(body).encoded())
    }
}

/// The idempotency keys seen in the last `window` of command time, with what each answered.
///
/// Keys leave in the order they came (command time never goes back, so that is expiry
/// order, and `sequence` keeps it across a restore); past `maxEntries` keys or `maxBytes` of
/// answers the oldest leave early. Lookups are by key; nothing iterates the table in hash order.
struct IdempotencyTable: Sendable {
    struct Entry: Sendable, Equatable {
        let fingerprint: String
        /// Command time (ms) after which the key is free again.
        let expires: Int64
        let answer: StoredAnswer
        /// Arrival order.
        let sequence: Int

        /// What it counts against the byte limit.
        var bytes: Int {
            128 + fingerprint.utf8.count + answer.body.count
                + answer.headers.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        }
    }

    /// How long a key holds its answer: 10 minutes (section 7.3).
    static let window: Int64 = 600_000

    private(set) var entries: [String: Entry] = [:]
    /// Keys in arrival order, with the sequence they had then (a key used again after it
    /// left appears twice; the stale position is skipped).
    private var order: [(key: String, sequence: Int)] = []
    private var head = 0
    private var nextSequence = 0
    private(set) var bytes = 0

    var count: Int { entries.count }

    /// The answer kept for `key` at `time`, if it has not expired.
    func entry(_ key: String, at time: Int64) -> Entry? {
        guard let entry = entries[key], entry.expires > time else { return nil }
        return entry
    }

    /// Keeps `answer` for `key` from `time`.
    mutating func insert(_ key: String, fingerprint: String, answer: StoredAnswer, at time: Int64) {
        restore(
            key, Entry(fingerprint: fingerprint, expires: time + Self.window, answer: answer, sequence: nextSequence))
    }

    /// Puts an entry back (a restore: call in `sequence` order).
    mutating func restore(_ key: String, _ entry: Entry) {
        if let replaced = entries.updateValue(entry, forKey: key) { bytes -= replaced.bytes }
        bytes += entry.bytes
        order.append((key, entry.sequence))
        nextSequence = max(nextSequence, entry.sequence + 1)
    }

    /// Removes the keys expired by `time`, and the oldest past the limits; returns the keys removed.
    mutating func prune(at time: Int64, maxEntries: Int, maxBytes: Int) -> [String] {
        var removed: [String] = []
        while head < order.count {
            let (key, sequence) = order[head]
            guard let entry = entries[key], entry.sequence == sequence else {
                head += 1  // a stale position
                continue
            }
            guard entry.expires <= time || entries.count > maxEntries || bytes > maxBytes else { break }
            head += 1
            entries[key] = nil
            bytes -= entry.bytes
            removed.append(key)
        }
        if head >= 64, head * 2 >= order.count {
            order.removeFirst(head)
            head = 0
        }
        return removed
    }

    /// Every key, in arrival order (a checkpoint).
    var keys: [String] {
        order[head...].filter { entries[$0.key]?.sequence == $0.sequence }.map(\.key)
    }
}
