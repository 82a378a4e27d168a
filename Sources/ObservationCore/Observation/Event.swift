/// One event of an observer's stream (or of the admin stream): its id, its SSE event
/// name (`change`, `notification`, `cancelled`, `reset`, `objectCreated`, …) and its
/// JSON data, encoded once. An id of 0 means the event carries no id (reset and rebuild records).
public struct Event: Sendable {
    public let id: Int
    public let name: String
    public let data: [UInt8]
    /// The global revision of the command that made it (0: none), so that a stream can tell
    /// where one revision's events end (`?commits=1`) without reading the data.
    public let revision: Int

    public init(id: Int, name: String, data: [UInt8], revision: Int = 0) {
        self.id = id
        self.name = name
        self.data = data
        self.revision = revision
    }

    /// The memory this event occupies while a log holds it: its data's storage (capacity, not
    /// count) and a fixed share for its slot, the storage header and the allocator.
    public var heldBytes: Int { data.capacity + Self.overheadBytes }

    /// A ring slot (40 bytes, up to twice over while the ring compacts), the data's heap
    /// header (32) and malloc's rounding and bookkeeping (16).
    public static let overheadBytes = 128

    /// An empty slot.
    static let vacant = Event(id: 0, name: "", data: [])
}
