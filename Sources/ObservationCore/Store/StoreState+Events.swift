// MARK: - Events: what a command says to observers and to the admin stream

extension StoreState {
    /// An event for an observer's stream: it takes the observer's next id now, and goes into
    /// its log with the command's other effects.
    mutating func emit(_ name: String, _ data: [UInt8], to observerID: String, revision: Int? = nil) {
        guard let (log, id) = observers.takeEventID(observerID) else { return }
        effects.add(Event(id: id, name: name, data: data, revision: revision ?? self.revision), to: log)
        journal.mark(.lastEventID, observerID)
        journal.gate(log, through: id)
    }

    /// A change record of a batch, kept as parts (its registration's own around a shared tail).
    mutating func emit(_ record: BatchedRecord) {
        guard let (log, id) = observers.takeEventID(record.observerID, at: record.observerSlot) else { return }
        effects.add(Event(id: id, changeRecord: record.parts, revision: revision), to: log)
        journal.mark(.lastEventID, record.observerID)
        journal.gate(log, through: id)
    }

    /// An event for the admin stream (its own gapless ids), with `members` (at least one).
    mutating func emitAdmin(_ name: String, _ members: JSONObject) {
        emitAdmin(name) { $0.writeMembers(members) }
    }

    /// An admin event whose members `write` writes (inside the braces, without them; at least
    /// one), with the client whose write caused it as the last member: made in one piece.
    mutating func emitAdmin(_ name: String, members write: (inout JSONWriter) -> Void) {
        let (bytes, revision) = (Self.adminRecord(by: by, tx: tx, members: write), revision)
        emitAdmin { Event(id: $0, name: name, data: bytes, revision: revision) }
    }

    /// The next admin event, made by `event` with the id it takes.
    mutating func emitAdmin(_ event: (_ id: Int) -> Event) {
        adminLastEventID += 1
        effects.add(event(adminLastEventID), to: adminLog)
        journal.gate(adminLog, through: adminLastEventID)
    }

    /// An admin event's data: `{`, the members `write` writes, `"by"` when the write has a
    /// client and `"tx"` when a transaction made it, `}`.
    static func adminRecord(by: String?, tx: String?, members write: (inout JSONWriter) -> Void) -> [UInt8] {
        JSONWriter.encode { writer in
            writer.raw("{")
            write(&writer)
            writer.writeCause(by: by, tx: tx)
            writer.raw("}")
        }
    }

    /// The `cancelled` event of a removed registration or subscription (`field` names which).
    mutating func emitCancelled(
        _ field: StaticString, _ id: String, reason: String, revision: Int, to observerID: String
    ) {
        let bytes = JSONWriter.encode { writer in
            writer.raw("{\"")
            writer.raw(field)
            writer.raw("\":")
            writer.write(id)
            writer.raw(",\"reason\":")
            writer.write(reason)
            writer.raw(",\"revision\":")
            writer.write(revision)
            writer.raw("}")
        }
        emit("cancelled", bytes, to: observerID)
    }
}
