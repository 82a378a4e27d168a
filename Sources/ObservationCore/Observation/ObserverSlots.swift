/// The observers' records, each in a slot (a removed one's slot is reused, the last freed
/// first), found by id or by a slot kept from before: a fan-out takes each observer's next
/// event id through the slot its registration keeps, without hashing the observer's id.
struct ObserverSlots: Sendable {
    private var records: [ObserverRecord?] = []
    private var freeSlots: [Int] = []
    private var slotByID: [String: Int] = [:]

    var count: Int { slotByID.count }

    /// Every observer id, in no particular order.
    var keys: Dictionary<String, Int>.Keys { slotByID.keys }

    /// Every record, in no particular order.
    var values: [ObserverRecord] { records.compactMap { $0 } }

    /// Where observer `id` is.
    func slot(of id: String) -> Int? { slotByID[id] }

    subscript(id: String) -> ObserverRecord? { slotByID[id].flatMap { records[$0] } }

    /// Enters `record`, in place of one with its id if there is one.
    mutating func insert(_ record: ObserverRecord) {
        if let slot = slotByID[record.id] {
            records[slot] = record
        } else if let slot = freeSlots.popLast() {
            records[slot] = record
            slotByID[record.id] = slot
        } else {
            slotByID[record.id] = records.count
            records.append(record)
        }
    }

    mutating func removeValue(forKey id: String) -> ObserverRecord? {
        guard let slot = slotByID.removeValue(forKey: id) else { return nil }
        freeSlots.append(slot)
        defer { records[slot] = nil }
        return records[slot]
    }

    /// Changes observer `id`'s record in place; nil when there is none.
    mutating func inPlace<T>(_ id: String, _ body: (inout ObserverRecord) -> T) -> T? {
        slotByID[id].flatMap { inPlace(slot: $0, id: id, body) }
    }

    /// `inPlace` through a slot kept from before: nil when observer `id` is not there (any more).
    mutating func inPlace<T>(slot: Int, id: String, _ body: (inout ObserverRecord) -> T) -> T? {
        guard records.indices.contains(slot) else { return nil }
        return Self.change(&records[slot], ifItIs: id, body)
    }

    /// `body` on `record` when it is observer `id`'s. Through `inout`: reading the id of an
    /// element in place copied the whole record out (retaining every field).
    private static func change<T>(
        _ record: inout ObserverRecord?, ifItIs id: String, _ body: (inout ObserverRecord) -> T
    ) -> T? {
        guard record?.id == id else { return nil }
        return body(&record!)
    }
}
