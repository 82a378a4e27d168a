import ObservationCore

/// A data directory in memory, updated the way the database applies a batch: a checkpoint
/// (entity rows by kind and id, and the counters) with the commands after it. Applying a batch
/// publishes its events, as the committer does once a batch is durable.
struct DataDirectory {
    var rows: [String: PersistedRow] = [:]
    var commands: [(position: Int, bytes: [UInt8])] = []
    var revision = 0
    var adminLastEventID = 0
    var clock: Int64 = 0
    var checkpoint = 0

    mutating func apply(_ batch: JournalBatch) {
        if let snapshot = batch.checkpoint {
            for row in snapshot.rows() { rows["\(row.kind.rawValue)/\(row.id)"] = row.document == nil ? nil : row }
            commands.removeAll { $0.position <= snapshot.position }
            (revision, adminLastEventID, clock, checkpoint) = (
                snapshot.revision, snapshot.adminLastEventID, snapshot.clock, snapshot.position
            )
        }
        commands += batch.commands
        batch.publish()
    }

    var image: PersistedImage {
        PersistedImage(
            rows: rows.keys.sorted().compactMap { rows[$0] }, revision: revision, adminLastEventID: adminLastEventID,
            clock: clock, checkpoint: checkpoint, commands: commands)
    }
}

/// Everything a client can see of a store, for comparing before and after a restart.
func visibleState(_ store: Store) throws -> [String] {
    let objects = try store.as(.admin).objects(className: nil, limit: 1000, after: nil).objects.map {
        String(decoding: JSON.object($0.json).encoded(), as: UTF8.self)
    }
    let classes = try store.as(.admin).classes().map {
        "\($0.schema.name) \($0.revision) \(String(decoding: JSON.object($0.schema.json).encoded(), as: UTF8.self))"
    }
    let observers = try store.as(.admin).observers().map { summary in
        let observer = try store.as(.admin).observer(summary.id)
        return "\(observer.id) \(observer.name) \(observer.lease) \(observer.lastEventID) "
            + "\(observer.registrations.map { String(decoding: JSON.object($0.json).encoded(), as: UTF8.self) }) "
            + "\(observer.subscriptionList.map { String(decoding: JSON.object($0.json).encoded(), as: UTF8.self) })"
    }
    let stats = store.stats()
    return objects + classes + observers + ["revision \(stats.revision)", "observations \(stats.observations)"]
}

/// The events a log holds, as `id name data` lines.
func held(_ log: EventLog) -> [String] {
    guard case .events(let events) = log.read(after: log.oldestID - 1, limit: 100_000) else { return [] }
    return events.map { "\($0.id) \($0.name) \(String(decoding: $0.data, as: UTF8.self))" }
}
