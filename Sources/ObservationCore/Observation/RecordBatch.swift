// MARK: - What one change's propagation collects: shared evaluations, records, throttle windows

/// What reading a key path on an object gave: its value and the places it read.
struct Evaluation {
    let value: JSON
    let paths: Set<ObjectPath>
    let location: ObjectPath?
}

/// Evaluations by (object, key path) during one propagation (off for a single registration:
/// nothing to share, and the lookup would cost).
struct EvaluationCache {
    private struct Key: Hashable {
        let objectID: String
        let keyPath: String
        /// What the reader may read (`ReadFilter.key`; empty: everything).
        let reader: String
    }

    private var known: [Key: Evaluation]?

    init(enabled: Bool) { known = enabled ? [:] : nil }

    mutating func evaluation(
        of keyPath: KeyPath, on objectID: String, reader: ReadFilter?, read: () -> Evaluation
    ) -> Evaluation {
        guard known != nil else { return read() }
        let key = Key(objectID: objectID, keyPath: keyPath.description, reader: reader?.key ?? "")
        if let evaluation = known?[key] { return evaluation }
        let evaluation = read()
        known?[key] = evaluation
        return evaluation
    }
}

/// The records of one change, prior ones apart, with record tails shared between
/// registrations on the same value and options (encoded once, not once per observer).
struct RecordBatch {
    var priors: [BatchedRecord] = []
    var posts: [BatchedRecord] = []
    private var tails: [TailKey: SharedTail] = [:]
    /// The tail used last: registrations on one value come one after the other, and comparing
    /// with it costs less than hashing a key.
    private var lastTail: SharedTail?
    /// Off for a single registration: nothing to share, and the lookup would cost.
    private(set) var sharesTails: Bool
    /// The transaction that made the change (section 15): every record of it carries it.
    private(set) var tx: String?

    /// The most records a batch kept between changes may have room for (a fan-out's are freed).
    static let spareCapacity = 16

    init(sharesTails: Bool, tx: String?) {
        self.sharesTails = sharesTails
        self.tx = tx
    }

    /// An emptied batch (`emptyForReuse`) taken for the records of another change.
    mutating func reuse(sharesTails: Bool, tx: String?) {
        self.sharesTails = sharesTails
        self.tx = tx
    }

    /// Lets go of the records, keeping the lists' storage for the next change (a write's list of
    /// one record was allocated and freed each time). False when the lists grew past
    /// `spareCapacity`: such a batch is not worth keeping.
    mutating func emptyForReuse() -> Bool {
        guard posts.capacity <= Self.spareCapacity, priors.capacity <= Self.spareCapacity else { return false }
        // One at a time: `removeAll` destroys them through the runtime's generic array destroy.
        while priors.popLast() != nil {}
        while posts.popLast() != nil {}
        if !tails.isEmpty { tails = [:] }
        lastTail = nil
        return true
    }

    /// The records of `registration` for a change from `old` to `new` made by `by` (none for
    /// the observer's own echo, with `skipOwn`). `ownTail`: its old value is its own (a
    /// throttled registration's, folded changes included), so its tail is not shared.
    /// `folded`: it holds changes folded from earlier writes, so it names no transaction.
    mutating func add(
        _ registration: Registration, old: JSON, new: JSON, revision: Int, toMany: ToManyChange?, by: String?,
        ownTail: Bool = false, folded: Bool = false
    ) {
        if let own = registration.skipsClient, own == by { return }  // skipOwn: not its own echo
        var record = ChangeRecord(revision: revision)
        record.by = by
        record.tx = folded ? nil : tx
        var recordOld: JSON? = old
        var recordNew: JSON? = new
        if let toMany, registration.location == toMany.location, registration.keyPath.keys != nil {
            record.kind = toMany.mutation.kind.rawValue
            record.indexes = toMany.mutation.indexes
            recordOld = toMany.mutation.kind == .insertion ? .none : .array(toMany.mutation.affected(in: toMany.before))
            recordNew = toMany.mutation.kind == .removal ? .none : .array(toMany.mutation.affected(in: toMany.after))
        }
        if registration.options.contains(.prior) {
            var prior = record
            prior.flag = .prior
            prior.old = registration.options.contains(.old) ? recordOld : nil
            priors.append(BatchedRecord(registration, encode(registration, prior, shared: !ownTail)))
        }
        record.old = registration.options.contains(.old) ? recordOld : nil
        record.new = registration.options.contains(.new) ? recordNew : nil
        posts.append(BatchedRecord(registration, encode(registration, record, shared: !ownTail)))
    }

    /// A tail is shared by records that would encode it alike: the same kind, flags and
    /// transaction, and `old` and `new` written alike (registrations on one key path may differ
    /// in both: by what their tokens may read, and since their last notification of a `manual`
    /// key; on two key paths, equal values may be spelled apart, `1` and `1.0`).
    private mutating func encode(_ registration: Registration, _ record: ChangeRecord, shared: Bool) -> RecordParts {
        guard sharesTails, shared else { return RecordParts(tail: ChangeRecord.encode(registration, record: record)) }
        if let lastTail, lastTail.encodes(record) { return ChangeRecord.parts(registration, tail: lastTail.bytes) }
        let key = TailKey(
            objectID: registration.objectID, keyPath: registration.keyPath.description,
            reader: registration.reader?.key ?? "", kind: record.kind, prior: record.flag == .prior)
        let tail: SharedTail
        if let known = tails[key], known.encodes(record) {
            tail = known
        } else {
            tail = SharedTail(record)
            tails[key] = tail
        }
        lastTail = tail
        return ChangeRecord.parts(registration, tail: tail.bytes)
    }
}

/// An encoded record tail, with what it was encoded from (`ChangeRecord.writeTail`; the
/// revision and the writer are the batch's).
private struct SharedTail {
    let kind: String
    let indexes: [Int]?
    let flag: ChangeRecord.Flag?
    let old: JSON?
    let new: JSON?
    let tx: String?
    let bytes: [UInt8]

    init(_ record: ChangeRecord) {
        (kind, indexes, flag) = (record.kind, record.indexes, record.flag)
        (old, new, tx) = (record.old, record.new, record.tx)
        bytes = record.encodedTail()
    }

    /// Whether `record` (of the same batch) encodes to these bytes.
    func encodes(_ record: ChangeRecord) -> Bool {
        flag == record.flag && kind == record.kind && indexes == record.indexes && tx == record.tx
            && Self.alike(old, record.old) && Self.alike(new, record.new)
    }

    private static func alike(_ a: JSON?, _ b: JSON?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): a.encodesLike(b)
        default: false
        }
    }
}

/// One record of a batch, with its observer (and where the observer's record is, from the
/// registration). A struct: a list of tuples is destroyed through the runtime's generic witness.
struct BatchedRecord {
    let observerID: String
    let observerSlot: Int
    let parts: RecordParts

    init(_ registration: Registration, _ parts: RecordParts) {
        observerID = registration.observerID
        observerSlot = registration.observerSlot
        self.parts = parts
    }
}

/// What throttling decides for the registrations one change reaches (section 7.3).
struct ThrottleWindows {
    enum Decision {
        /// A record now: from `old` (the value before the first change folded into it), by
        /// `writer` (nil when its changes came from several); `merged`: it holds folded changes.
        case send(old: JSON, writer: String?, merged: Bool)
        /// Folded into the open window's record.
        case fold
        /// No record: the observer's own echo (`skipOwn`), or folded changes that cancelled out.
        case none
    }

    /// Registrations whose throttle state changed.
    var touched: [String] = []
    /// Windows holding folded changes, by when they end.
    var folding: [(id: String, end: Timestamp)] = []
    /// Registrations whose folded changes went out (or cancelled out) now: no flush is due.
    var settled: [String] = []

    /// A change from `old` to `new` at `now`. Inside an open window it is folded. Otherwise
    /// it goes out at once, together with what the ended window folded (its flush may not
    /// have been applied yet), and opens a new window; the observer's own echo opens none.
    mutating func decide(
        _ registration: inout Registration, old: JSON, new: JSON, revision: Int, by: String?, at now: Timestamp
    ) -> Decision {
        touched.append(registration.id)
        if let end = registration.windowEnd, now < end {
            if var folded = registration.folded {
                folded.revision = revision
                if folded.by != by { folded.by = nil }
                registration.folded = folded
            } else {
                registration.folded = FoldedChange(old: old, revision: revision, by: by)
            }
            folding.append((registration.id, end))
            return .fold
        }
        let folded = registration.folded
        if folded != nil {
            registration.folded = nil
            settled.append(registration.id)
        }
        let first = folded?.old ?? old
        let writer = folded.map { $0.by == by ? by : nil } ?? by
        registration.notifiedValue = new
        let own = registration.skipsClient != nil && registration.skipsClient == writer
        guard !own, folded == nil || first != new else {
            registration.windowEnd = nil
            return .none
        }
        registration.windowEnd = Timestamp(milliseconds: now.milliseconds + Int64(registration.throttle))
        return .send(old: first, writer: writer, merged: folded != nil)
    }
}

/// Where a batch looks for a tail to share when the last one does not do: registrations on the
/// same object and key path, reading alike.
private struct TailKey: Hashable {
    let objectID: String
    let keyPath: String
    let reader: String
    let kind: String
    let prior: Bool
}
