/// NSNotificationQueue: postings waiting for delivery, `asap` (at the end of the current
/// batch) or `idle` (once the server has had no request for a while).
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
        let enqueuedAt: ContinuousClock.Instant
    }

    private(set) var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }

    /// Removes every queued entry (of either style, as GNUstep does) that matches `entry` under
    /// `mask`, then appends `entry` (the latest wins). Returns how many were removed.
    mutating func enqueue(_ entry: Entry, coalescing mask: CoalescingMask) -> Int {
        var removed = 0
        if !mask.isEmpty {
            let before = entries.count
            entries.removeAll { queued in
                (!mask.contains(.name) || queued.name == entry.name)
                    && (!mask.contains(.object) || queued.object == entry.object)
            }
            removed = before - entries.count
        }
        entries.append(entry)
        return removed
    }

    /// Takes the queued entries of `style`, in posting order.
    mutating func take(_ style: Style) -> [Entry] {
        let taken = entries.filter { $0.style == style }
        entries.removeAll { $0.style == style }
        return taken
    }

    /// The oldest entry of `style`.
    func oldest(_ style: Style) -> ContinuousClock.Instant? {
        entries.first { $0.style == style }?.enqueuedAt
    }
}
