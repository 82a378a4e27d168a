/// The observers: their records, their token hashes, their leases and their stream counts.
///
/// A lease counts only while no stream of its observer is open: the deadline heap holds one
/// entry per observer without a stream, moved in place by keepalives. Times are the
/// commands' wall-clock times. Owns its fields; every list it hands out is sorted.
struct ObserverTable: Sendable {
    private var observers = ObserverSlots()
    private var byTokenHash: [String: String] = [:]
    /// The observers each scoped token (or JWT) made (section 13).
    private var byAccessToken: [String: Set<String>] = [:]
    /// When each observer without a stream expires (milliseconds since 1970).
    private(set) var leases = DeadlineHeap<Int64>()
    /// Open event streams, the admin stream included.
    private(set) var streams = 0
    /// Admin streams per cluster node (observers' streams are counted in their records).
    private var adminHolders: [String: Int] = [:]
    /// The observers that deliver to a URL (section 16): the deliverer reads these, not every observer.
    private(set) var delivering: Set<String> = []

    var count: Int { observers.count }

    subscript(id: String) -> ObserverRecord? { observers[id] }

    func existing(_ id: String) throws(CoreError) -> ObserverRecord {
        guard let observer = observers[id] else { throw CoreError.notFound("observer", id) }
        return observer
    }

    func observerID(forTokenHash hash: String) -> String? { byTokenHash[hash] }

    /// The observers token `id` made, sorted.
    func made(by tokenID: String) -> [String] { byAccessToken[tokenID].map { $0.sorted() } ?? [] }

    /// How many observers token `id` made.
    func count(madeBy tokenID: String) -> Int { byAccessToken[tokenID]?.count ?? 0 }

    /// Changes an observer's record in place (fields that no index holds).
    mutating func update(_ id: String, _ body: (inout ObserverRecord) -> Void) {
        observers.inPlace(id) { body(&$0) }
    }

    /// Every observer, in creation order (then id).
    var all: [ObserverRecord] {
        observers.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
    }

    /// Every observer id, sorted (for passes whose order must not depend on hashing).
    var ids: [String] { observers.keys.sorted() }

    /// Adds an observer without a stream; its lease runs from `time`.
    mutating func insert(_ record: ObserverRecord, at time: Timestamp) {
        var record = record
        // A delivering observer has no lease (section 16).
        record.expiresAt =
            record.delivery != nil ? nil : Timestamp(milliseconds: time.milliseconds + Int64(record.lease) * 1000)
        observers.insert(record)
        if record.delivery != nil { delivering.insert(record.id) }
        byTokenHash[record.tokenHash] = record.id
        if let tokenID = record.access?.tokenID { byAccessToken[tokenID, default: []].insert(record.id) }
        if let deadline = record.expiresAt { leases.schedule(record.id, at: deadline.milliseconds) }
    }

    /// Takes an observer out (its streams, if any, stay counted until they close; those of
    /// cluster nodes stop counting now, and their closes change nothing).
    @discardableResult
    mutating func remove(_ id: String) -> ObserverRecord? {
        guard let record = observers.removeValue(forKey: id) else { return nil }
        delivering.remove(id)
        streams = max(0, streams - record.holders.values.reduce(0, +))
        byTokenHash[record.tokenHash] = nil
        if let tokenID = record.access?.tokenID {
            byAccessToken[tokenID]?.remove(id)
            if byAccessToken[tokenID]?.isEmpty == true { byAccessToken[tokenID] = nil }
        }
        leases.cancel(id)
        return record
    }

    /// Restarts the lease count from `time`; returns when it now runs out (nil while a stream holds it).
    mutating func keepalive(_ id: String, at time: Timestamp) throws(CoreError) -> Timestamp? {
        guard observers[id] != nil else { throw CoreError.notFound("observer", id) }
        return observers.inPlace(id) { record in
            guard record.streams == 0 else { return nil }
            let deadline = Timestamp(milliseconds: time.milliseconds + Int64(record.lease) * 1000)
            record.expiresAt = deadline
            leases.schedule(id, at: deadline.milliseconds)
            return deadline
        } ?? nil
    }

    /// The observers whose lease ran out by `time`, earliest first, taken off the heap.
    mutating func dueLeases(at time: Timestamp) -> [String] {
        var due: [String] = []
        while let next = leases.first, next.deadline <= time.milliseconds {
            _ = leases.popFirst()
            if observers[next.id]?.delivery == nil { due.append(next.id) }  // no lease (section 16)
        }
        return due
    }

    /// The earliest lease deadline.
    var nextLeaseDeadline: Timestamp? { leases.first.map { Timestamp(milliseconds: $0.deadline) } }

    /// Counts a new stream of `id` (nil: the admin stream), held by cluster node `holder` (nil:
    /// this server); it holds the observer's lease.
    mutating func openStream(of id: String?, holder: String?, limit: Int) throws(CoreError) -> EventLog? {
        guard streams < limit else {
            throw CoreError(
                .limitExceeded, "the server holds its limit of \(limit) event streams", details: ["limit": .int(limit)])
        }
        guard let id else {
            streams += 1
            if let holder { adminHolders[holder, default: 0] += 1 }
            return nil
        }
        guard observers[id] != nil else { throw CoreError.notFound("observer", id) }
        streams += 1
        leases.cancel(id)
        return observers.inPlace(id) { record in
            record.streams += 1
            if let holder { record.holders[holder, default: 0] += 1 }
            record.expiresAt = nil
            return record.log
        }
    }

    /// Counts a stream as closed; the last one of an observer restarts its lease at `time`.
    /// A holder's close after its `nodeDown` (or of a stream it never opened) changes nothing.
    mutating func closeStream(of id: String?, holder: String?, at time: Timestamp) {
        guard let id else {
            if let holder {
                guard let held = adminHolders[holder] else { return }
                adminHolders[holder] = held > 1 ? held - 1 : nil
            }
            streams = max(0, streams - 1)
            return
        }
        let closed: (counted: Bool, deadline: Int64?)? = observers.inPlace(id) { record in
            if let holder {
                guard let held = record.holders[holder] else { return (false, nil) }
                record.holders[holder] = held > 1 ? held - 1 : nil
            }
            record.streams = max(0, record.streams - 1)
            guard record.streams == 0 else { return (true, nil) }
            let deadline = time.milliseconds + Int64(record.lease) * 1000
            record.expiresAt = Timestamp(milliseconds: deadline)
            return (true, deadline)
        }
        // A stream of an observer removed since still counts until it closes (as on one server).
        if closed?.counted ?? (holder == nil) { streams = max(0, streams - 1) }
        if let deadline = closed?.deadline { leases.schedule(id, at: deadline) }
    }

    /// Cluster node `holder` is gone: every stream it held closes at `time` (observers in id order).
    mutating func nodeDown(_ holder: String, at time: Timestamp) {
        if let held = adminHolders.removeValue(forKey: holder) { streams = max(0, streams - held) }
        for id in ids {
            let closed: (held: Int, deadline: Int64?)? = observers.inPlace(id) { record in
                guard let held = record.holders.removeValue(forKey: holder) else { return (0, nil) }
                record.streams = max(0, record.streams - held)
                guard record.streams == 0 else { return (held, nil) }
                let deadline = time.milliseconds + Int64(record.lease) * 1000
                record.expiresAt = Timestamp(milliseconds: deadline)
                return (held, deadline)
            }
            streams = max(0, streams - (closed?.held ?? 0))
            if let deadline = closed?.deadline { leases.schedule(id, at: deadline) }
        }
    }

    /// The admin streams each cluster node holds (a cluster checkpoint keeps them).
    var adminHolderCounts: [String: Int] { adminHolders }

    /// Restores exactly what a cluster checkpoint says of an observer's streams and lease.
    mutating func restoreStreams(of id: String, holders: [String: Int], expiresAt: Timestamp?) {
        let held = holders.values.reduce(0, +)
        guard observers[id] != nil else { return }
        observers.inPlace(id) { record in
            record.holders = holders
            record.streams = held
            record.expiresAt = expiresAt
        }
        streams += held
        if let expiresAt { leases.schedule(id, at: expiresAt.milliseconds) } else { leases.cancel(id) }
    }

    /// Takes the streams and leases of `live` (this process's table before a rollback: its streams
    /// stay open across it) for every observer both hold; an observer only this table has (its
    /// removal was rolled back) has no stream, and its lease counts from `time`.
    mutating func adoptStreams(from live: ObserverTable, at time: Timestamp) {
        streams = live.streams
        adminHolders = live.adminHolders
        for id in ids {
            let current = live.observers[id]
            let expiresAt: Timestamp? =
                observers.inPlace(id) { record in
                    record.holders = current?.holders ?? [:]
                    record.streams = current?.streams ?? 0
                    record.expiresAt =
                        if let current { current.expiresAt } else {
                            Timestamp(milliseconds: time.milliseconds + Int64(record.lease) * 1000)
                        }
                    return record.expiresAt
                } ?? nil
            if let expiresAt { leases.schedule(id, at: expiresAt.milliseconds) } else { leases.cancel(id) }
        }
    }

    /// Restores the admin streams cluster nodes hold.
    mutating func restoreAdminHolders(_ holders: [String: Int]) {
        adminHolders = holders
        streams += holders.values.reduce(0, +)
    }

    /// After a start: no stream is open, and every lease counts from `time`.
    mutating func restart(at time: Timestamp) {
        streams = 0
        adminHolders = [:]
        for id in ids {
            let deadline: Int64? =
                observers.inPlace(id) { record -> Int64? in
                    record.streams = 0
                    record.holders = [:]
                    guard record.delivery == nil else { return nil }  // no lease (section 16)
                    let deadline = time.milliseconds + Int64(record.lease) * 1000
                    record.expiresAt = Timestamp(milliseconds: deadline)
                    return deadline
                } ?? nil
            if let deadline { leases.schedule(id, at: deadline) }
        }
    }

    /// Continues an observer's event ids after `lastID` (restoring; never goes back).
    mutating func continueEvents(of id: String, after lastID: Int) {
        observers.inPlace(id) { record in
            guard lastID > record.lastEventID else { return }
            record.lastEventID = lastID
            record.log.continueAfter(lastID)
        }
    }

    /// Where observer `id` is (kept by its registrations: `takeEventID(_:at:)`).
    func slot(of id: String) -> Int? { observers.slot(of: id) }

    /// The id the next event of observer `id` takes, and the log it goes to.
    mutating func takeEventID(_ id: String) -> (log: EventLog, id: Int)? {
        observers.inPlace(id, Self.nextEventID)
    }

    /// `takeEventID` through the slot the observer was in (`slot(of:)`), looked up by id only
    /// when it is not there any more.
    mutating func takeEventID(_ id: String, at slot: Int) -> (log: EventLog, id: Int)? {
        observers.inPlace(slot: slot, id: id, Self.nextEventID) ?? takeEventID(id)
    }

    private static func nextEventID(_ record: inout ObserverRecord) -> (log: EventLog, id: Int) {
        record.lastEventID += 1
        return (record.log, record.lastEventID)
    }
}
