// MARK: - Restoring what sections 13, 14 and 16 added: tokens, onRemove patches, undelivered events

extension StoreState {
    /// A stored token (live, or ended and kept for its 401's reason).
    mutating func restoreToken(_ document: StoredDocument) throws(PersistenceError) {
        let id = document.row.id
        if document.members["ended"] != nil {
            let ended = EndedToken(
                reason: try document.string("ended"), secretHash: try document.optionalString("secretHash"))
            tokens.restoreEnded(id, ended, forgetAt: Int64(try document.int("forgetAt")))
            return
        }
        let scopes = try document.value("scopes")
        let grant = try document.checked { () throws(CoreError) in try AccessGrant(parsing: scopes) }
        let expiresAt: Timestamp? = try document.value("expiresAt") == .null ? nil : try document.timestamp("expiresAt")
        tokens.insert(
            StoredToken(
                id: id, name: try document.string("name"), secretHash: try document.string("secretHash"),
                access: Access(
                    tokenID: id, kind: .token, grant: grant, client: try document.optionalString("client"),
                    expiresAt: nil),
                createdAt: try document.timestamp("createdAt"), expiresAt: expiresAt))
    }

    /// An observer document's `onRemove` patches (none in data directories from before section 14).
    static func removalPatches(_ document: StoredDocument) throws(PersistenceError) -> [RemovalPatch] {
        guard case .array(let patches)? = document.members["onRemove"] else { return [] }
        var restored: [RemovalPatch] = []
        for patch in patches {
            guard case .object(let members) = patch, case .string(let object)? = members["object"],
                case .object(let values)? = members["values"]
            else { throw document.failure("an onRemove patch is unreadable") }
            restored.append(RemovalPatch(object: object, values: values))
        }
        return restored
    }

    /// A `lastEventId` document's `pending` events (section 16); nil when it has none.
    static func pendingEvents(_ document: StoredDocument) throws(PersistenceError) -> [Event]? {
        guard case .array(let items)? = document.members["pending"] else { return nil }
        var events: [Event] = []
        for item in items {
            guard case .object(let members) = item, case .int(let id)? = members["id"],
                case .string(let name)? = members["event"], case .int(let revision)? = members["revision"],
                case .string(let data)? = members["data"]
            else { throw document.failure("an unreadable pending event") }
            events.append(Event(id: id, name: name, data: Array(data.utf8), revision: revision))
        }
        return events
    }
}
