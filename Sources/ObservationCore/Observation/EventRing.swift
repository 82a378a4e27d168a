/// The events a log holds, oldest first: appended at the end, removed from the front, both
/// in amortised constant time. A removed event's slot is cleared at once (its bytes freed).
struct EventRing: Sendable {
    private var storage: [Event] = []
    private var head = 0

    var count: Int { storage.count - head }

    /// The event `offset` places after the oldest.
    subscript(offset: Int) -> Event { storage[head + offset] }

    mutating func append(_ event: Event) { storage.append(event) }

    mutating func removeFirst() -> Event {
        let event = storage[head]
        storage[head] = .vacant
        head += 1
        if head >= 32, head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
        return event
    }

    /// Removes the newest event (nil when empty).
    mutating func removeLast() -> Event? {
        guard count > 0 else { return nil }
        return storage.removeLast()
    }
}
