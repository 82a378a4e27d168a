/// NSNotificationQueue: postings waiting for delivery, `asap` (at the end of the current
/// batch) or `idle` (once the server has had no request for a while).
///
/// Bounded: at most `maxEntries` postings and `maxBytes` bytes (their name, object and
/// encoded `userInfo`, plus a fixed share per entry) wait at once, both queues together;
/// a posting past either is refused (`limitExceeded`) and changes nothing.
struct NotificationQueue: Sendable {
    enum Style: String, Sendable {
        case asap, idle
    }

    /// What coalescing compares: the name, the object, or both (NSNotificationCoalescing).
    struct CoalescingMask: OptionSet, Sendable {
        let rawValue: UInt8
        static let name = CoalescingMask(rawValue: 1)
        static let object = CoalescingMask(rawValue: 2)
    }

    struct Entry: Sendable {
        let name: String
        let object: String?
        let userInfo: JSON?
        let style: Style
        let enqueuedAt: Timestamp
        /// The client that posted it (section 7.3).
        var by: String? = nil
        /// What the entry counts against the byte limit.
        let bytes: Int

        init(name: String, object: String?, userInfo: JSON?, style: Style, enqueuedAt: Timestamp, by: String? = nil) {
            self.by = by
            self.name = name
            self.object = object
            self.userInfo = userInfo?.isNull == true ? nil : userInfo
            self.style = style
            self.enqueuedAt = enqueuedAt
            bytes = 128 + name.utf8.count + (object?.utf8.count ?? 0) + (userInfo?.encoded().count ?? 0)
        }
    }

    private(set) var entries: [Entry] = []
    private(set) var bytes = 0

    var isEmpty: Bool { entries.isEmpty }

    /// Removes every queued entry (of either style, as GNUstep does) that matches `entry` under
    /// `mask`, then appends `entry` (the latest wins). Returns how many were removed. Throws
    /// `limitExceeded`, changing nothing, when the queue would be over a limit afterwards.
    mutating func enqueue(
        _ entry: Entry, coalescing mask: CoalescingMask, maxEntries: Int = .max, maxBytes: Int = .max
    ) throws(CoreError) -> Int {
        func coalesced(_ queued: Entry) -> Bool {
            !mask.isEmpty && (!mask.contains(.name) || queued.name == entry.name)
                && (!mask.contains(.object) || queued.object == entry.object)
        }
        let leaving = entries.filter(coalesced)
        let count = entries.count - leaving.count + 1
        let total = bytes - leaving.reduce(0) { $0 + $1.bytes } + entry.bytes
        guard count <= maxEntries, total <= maxBytes else {
            throw CoreError(
                .limitExceeded,
                "the notification queue holds its limit of \(maxEntries) postings and \(maxBytes) bytes",
                details: ["limit": .int(maxEntries), "limitBytes": .int(maxBytes)])
        }
        if !leaving.isEmpty { entries.removeAll(where: coalesced) }
        entries.append(entry)
        bytes = total
        return leaving.count
    }

    /// Takes the queued entries of `style`, in posting order.
    mutating func take(_ style: Style) -> [Entry] {
        let taken = entries.filter { $0.style == style }
        entries.removeAll { $0.style == style }
        bytes -= taken.reduce(0) { $0 + $1.bytes }
        return taken
    }

    /// The oldest entry of `style`.
    func oldest(_ style: Style) -> Timestamp? {
        entries.first { $0.style == style }?.enqueuedAt
    }
}
