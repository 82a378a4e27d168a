/// One KVO registration: an observer watching `keyPath` of one object (FBKVOController's `_FBKVOInfo`).
///
/// It remembers the value it last saw (the `old` of the next change), the value at
/// its last notification (the `old` of a manual `notify`), and the places its key
/// path read, so a write finds it through the dependency index and a change of a
/// link re-binds it to the new target.
struct Registration: Sendable {
    let id: String
    let observerID: String
    let objectID: String
    let keyPath: KeyPath
    let options: ObservationOptions
    let context: JSON?
    let createdAt: Timestamp
    /// Creation order, for listing and for a stable record order within one change.
    let sequence: Int
    /// The notify policy of the computed property the path ends on, if it does.
    var derivedPolicy: NotifyPolicy?
    var value: JSON
    var notifiedValue: JSON
    var dependencies: Set<ObjectPath>
    /// Where the observed value is stored, when it is a stored value (to-many records).
    var location: ObjectPath?
    /// Its change records' own bytes around the shared tail (`ChangeRecord.framing`), made once
    /// when it is bound: a fan-out copies them instead of encoding its ids again.
    var recordFraming: (prefix: [UInt8], suffix: [UInt8]) = ([], [])
    /// Where its observer's record is (`ObserverTable.slot(of:)`), when it was bound: its records
    /// take their event ids there without hashing the observer's id (checked on use).
    var observerSlot = 0
    /// With `skipOwn`: the observer's client, whose own changes make no record here.
    var skipsClient: String? = nil
    /// What its observer's token may read (section 13); nil: everything.
    var reader: ReadFilter?
    /// At most one record per this many milliseconds (0: every record at once; section 7.3).
    var throttle = 0
    /// While throttled: when the window of the last record sent ends.
    var windowEnd: Timestamp? = nil
    /// Changes folded while the window is open, sent as one record when it ends.
    var folded: FoldedChange? = nil
}

/// Changes a throttled registration folded into one record (section 7.3).
struct FoldedChange: Sendable, Equatable {
    /// The value before the first of them.
    let old: JSON
    /// The revision of the latest.
    var revision: Int
    /// Who made them: the client, when all came from the same one; else nil.
    var by: String?
}

/// A registration as clients see it.
public struct RegistrationSnapshot: Sendable, Equatable {
    public let id: String
    public let observerID: String
    public let objectID: String
    public let keyPath: String
    public let options: ObservationOptions
    public let context: JSON?
    public let createdAt: Timestamp
    /// Milliseconds between records (0: not throttled).
    public var throttle = 0
}

extension Registration {
    var snapshot: RegistrationSnapshot {
        RegistrationSnapshot(
            id: id, observerID: observerID, objectID: objectID, keyPath: keyPath.description, options: options,
            context: context, createdAt: createdAt, throttle: throttle)
    }
}
