/// One event of an observer's stream (or of the admin stream): its id, its SSE event
/// name (`change`, `notification`, `cancelled`, `reset`, `objectCreated`, …) and its
/// JSON data, encoded once and shared by every stream that sends it. An id of 0 means the
/// event carries no id (reset and rebuild records).
///
/// The admin stream's `valueChanged` is the exception: every write makes one and only a
/// dashboard reads it, so it keeps its parts (`DeferredValueChanged`) and each stream or
/// poll that takes it encodes it (`materialized`; a cluster node's digest encodes it too).
public struct Event: Sendable {
    public let id: Int
    public let name: String
    private let payload: Payload
    /// The global revision of the command that made it (0: none), so that a stream can tell
    /// where one revision's events end (`?commits=1`) without reading the data.
    public let revision: Int

    private enum Payload: Sendable {
        case encoded([UInt8])
        case deferred(DeferredValueChanged)
    }

    public init(id: Int, name: String, data: [UInt8], revision: Int = 0) {
        self.id = id
        self.name = name
        self.payload = .encoded(data)
        self.revision = revision
    }

    init(id: Int, name: String, deferred: DeferredValueChanged, revision: Int) {
        self.id = id
        self.name = name
        self.payload = .deferred(deferred)
        self.revision = revision
    }

    /// The event's JSON data. A deferred event encodes it on every call: a reader that uses
    /// it more than once takes `materialized` first.
    public var data: [UInt8] {
        switch payload {
        case .encoded(let bytes): bytes
        case .deferred(let record): record.encode()
        }
    }

    /// This event with its data encoded (itself, when it is).
    public var materialized: Event {
        guard case .deferred(let record) = payload else { return self }
        return Event(id: id, name: name, data: record.encode(), revision: revision)
    }

    /// The memory this event occupies while a log holds it: its data's storage (capacity, not
    /// count; for a deferred event, a bound on its parts and the text they encode to) and a
    /// fixed share for its slot, the storage header and the allocator.
    public var heldBytes: Int {
        switch payload {
        case .encoded(let bytes): bytes.capacity + Self.overheadBytes
        case .deferred(let record): record.estimatedBytes + Self.overheadBytes
        }
    }

    /// A ring slot (40 bytes, up to twice over while the ring compacts), the data's heap
    /// header (32) and malloc's rounding and bookkeeping (16).
    public static let overheadBytes = 128

    /// An empty slot.
    static let vacant = Event(id: 0, name: "", data: [])
}

/// The admin stream's `valueChanged`, kept as its parts until a reader takes it: encoding
/// it on every write cost more than a tenth of an unobserved write's time (measured: W1
/// writes/s 5–11 % higher without it), and most of these events leave the admin log
/// unread. Its parts are values the write already made (the target's strings, the value
/// stored, the client), so holding them costs one allocation, this object; once the value
/// is overwritten, this is what keeps it, so its size counts in full (`JSON.estimatedBytes`).
final class DeferredValueChanged: Sendable {
    private let target: WriteTarget
    private let value: JSON
    private let extra: JSONObject
    private let revision: Int
    private let by: String?
    /// A bound on what this record holds and encodes to (`JSON.estimatedBytes`), counted
    /// against the admin log's byte limit.
    let estimatedBytes: Int

    init(target: WriteTarget, value: JSON, extra: JSONObject, revision: Int, by: String?) {
        self.target = target
        self.value = value
        self.extra = extra
        self.revision = revision
        self.by = by
        // The record's member names and the object (the target's strings are the graph's own).
        var estimate = 96 + target.objectID.utf8.count + target.key.utf8.count + value.estimatedBytes
        for part in target.inner { estimate += part.utf8.count + 1 }
        for (key, member) in extra { estimate += JSON.estimatedBytes(of: key) + 2 + member.estimatedBytes }
        estimatedBytes = estimate + (by.map { JSON.estimatedBytes(of: $0) + 6 } ?? 0)
    }

    /// `{"object":…,"keyPath":…,"value":…,<extra>,"revision":n,"by":…}`
    func encode() -> [UInt8] {
        StoreState.adminRecord(by: by) { writer in
            writer.raw("\"object\":")
            writer.write(target.objectID)
            writer.raw(",\"keyPath\":")
            writer.write(target.inner.isEmpty ? target.key : (target.inner + [target.key]).joined(separator: "."))
            writer.raw(",\"value\":")
            writer.write(value)
            for (key, member) in extra {
                writer.raw(",")
                writer.key(key)
                writer.write(member)
            }
            writer.raw(",\"revision\":")
            writer.write(revision)
        }
    }
}
