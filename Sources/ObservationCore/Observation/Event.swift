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
    private let label: Label
    private let payload: Payload
    /// The global revision of the command that made it (0: none), so that a stream can tell
    /// where one revision's events end (`?commits=1`) without reading the data.
    public let revision: Int

    private enum Payload: Sendable {
        case encoded([UInt8])
        /// A change record: its registration's own parts around the tail every registration on
        /// the same value shares (one copy for all; the record itself is never joined for a stream).
        case framed(RecordParts)
        case deferred(DeferredValueChanged)
    }

    /// The SSE event name.
    public var name: String { label.name }

    public init(id: Int, name: String, data: [UInt8], revision: Int = 0) {
        self.id = id
        self.label = Label(name)
        self.payload = .encoded(data)
        self.revision = revision
    }

    /// A `change` record whose data is `parts` joined (kept apart when it has a prefix or a suffix).
    init(id: Int, changeRecord parts: RecordParts, revision: Int) {
        self.id = id
        self.label = .change
        self.payload =
            parts.prefix.isEmpty && parts.suffix.isEmpty
            ? .encoded(parts.tail) : .framed(parts)
        self.revision = revision
    }

    /// The admin stream's `valueChanged`, encoded when read.
    init(id: Int, valueChanged deferred: DeferredValueChanged, revision: Int) {
        self.id = id
        self.label = .valueChanged
        self.payload = .deferred(deferred)
        self.revision = revision
    }

    /// The event's JSON data. A deferred event encodes it on every call: a reader that uses
    /// it more than once takes `materialized` first.
    public var data: [UInt8] {
        switch payload {
        case .encoded(let bytes): bytes
        case .framed(let parts): parts.prefix + parts.tail + parts.suffix
        case .deferred(let record): record.encode()
        }
    }

    /// The length of its data, when it is encoded (nil for a deferred event: take `materialized`).
    public var encodedCount: Int? {
        switch payload {
        case .encoded(let bytes): bytes.count
        case .framed(let record): record.count
        case .deferred: nil
        }
    }

    /// Copies its encoded data (`encodedCount` bytes) to `destination`; returns where it ends.
    public func copyEncoded(to destination: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        switch payload {
        case .encoded(let bytes):
            return Self.copy(bytes, to: destination)
        case .framed(let parts):
            return Self.copy(parts.suffix, to: Self.copy(parts.tail, to: Self.copy(parts.prefix, to: destination)))
        case .deferred:
            return destination
        }
    }

    private static func copy(_ bytes: [UInt8], to destination: UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
        bytes.withUnsafeBytes { source in
            if let base = source.baseAddress { destination.copyMemory(from: base, byteCount: source.count) }
        }
        return destination + bytes.count
    }

    /// Whether its data is still to be encoded (the admin stream's `valueChanged`).
    public var isDeferred: Bool {
        if case .deferred = payload { true } else { false }
    }

    /// This event with its data encoded (itself, when it is).
    public var materialized: Event {
        guard case .deferred(let record) = payload else { return self }
        return Event(id: id, label: label, payload: .encoded(record.encode()), revision: revision)
    }

    private init(id: Int, label: Label, payload: Payload, revision: Int) {
        (self.id, self.label, self.payload, self.revision) = (id, label, payload, revision)
    }

    /// An event's name: those the service makes as tags, copied with no reference counted
    /// (an event is copied several times on its way to a stream); any other as its string.
    private enum Label: Sendable {
        case change, valueChanged, notification, query
        case other(String)

        init(_ name: String) {
            switch name {
            case "change": self = .change
            case "valueChanged": self = .valueChanged
            case "notification": self = .notification
            case "query": self = .query
            default: self = .other(name)
            }
        }

        var name: String {
            switch self {
            case .change: "change"
            case .valueChanged: "valueChanged"
            case .notification: "notification"
            case .query: "query"
            case .other(let name): name
            }
        }
    }

    /// The memory this event occupies while a log buffers it: its data's storage (capacity, not
    /// count; for a deferred event, a bound on its parts and the text they encode to) and a
    /// fixed share for its slot, the storage header and the allocator.
    public var footprint: Int {
        switch payload {
        case .encoded(let bytes): bytes.capacity + Self.overheadBytes
        case .framed(let record): record.count + Self.overheadBytes
        case .deferred(let record): record.estimatedBytes + Self.overheadBytes
        }
    }

    /// A ring slot (40 bytes, up to twice over while the ring compacts), the data's heap
    /// header (32) and malloc's rounding and bookkeeping (16).
    public static let overheadBytes = 128

    /// An empty slot.
    static let vacant = Event(id: 0, name: "", data: [])
}
