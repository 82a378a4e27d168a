/// One event of an observer's stream (or of the admin stream): its id, its SSE event
/// name (`change`, `notification`, `cancelled`, `reset`, `objectCreated`, …) and its
/// JSON data, encoded once. An id of 0 means the event carries no id (reset and rebuild records).
public struct Event: Sendable {
    public let id: Int
    public let name: String
    public let data: [UInt8]

    public init(id: Int, name: String, data: [UInt8]) {
        self.id = id
        self.name = name
        self.data = data
    }
}
