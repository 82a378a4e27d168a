// The stored form of each entity: a JSON document per row. Derived state (values seen by
// registrations, indexes, stream counts, lease deadlines) is not stored: it is rebuilt.

extension JournalBatch.Entity {
    var document: JSON {
        switch self {
        case .class(let record):
            return ["definition": .object(record.schema.json), "revision": .int(record.revision)]
        case .object(let object, let pendingRelease):
            let members: JSONObject = [
                "class": object.className.map(JSON.string) ?? .null, "revision": .int(object.revision),
                "createdAt": .int(Int(object.createdAt.milliseconds)), "values": .object(object.values),
                "pendingRelease": .bool(pendingRelease),
            ]
            return .object(
                members.adding("owner", object.owner.map(JSON.string))
                    .adding("ownerToken", object.ownerToken.map(JSON.string)))
        case .observer(let observer):
            let members: JSONObject = [
                "name": .string(observer.name), "tokenHash": .string(observer.tokenHash), "lease": .int(observer.lease),
                "retainObserved": .bool(observer.retainObserved), "replay": .int(observer.log.capacity),
                "client": observer.client.map(JSON.string) ?? .null,
                "access": observer.access?.json ?? .null, "onRemove": .array(observer.onRemove.map(\.json)),
                "createdAt": .int(Int(observer.createdAt.milliseconds)), "lastEventId": .int(observer.lastEventID),
                // Read back only from exact (cluster) checkpoints; a start of one server resets them.
                "expiresAt": observer.expiresAt.map { .int(Int($0.milliseconds)) } ?? .null,
                "holders": .object(
                    JSONObject(observer.holders.sorted { $0.key < $1.key }.map { ($0.key, JSON.int($0.value)) })),
            ]
            // Section 16, written only for a delivering observer (older documents have neither).
            return .object(
                members.adding("deliver", observer.delivery?.json)
                    .adding("acknowledged", observer.delivery == nil ? nil : .int(observer.acknowledged)))
        case .registration(let registration):
            return [
                "observer": .string(registration.observerID), "object": .string(registration.objectID),
                "keyPath": .string(registration.keyPath.description),
                "options": .array(registration.options.nameList.map(JSON.string)),
                "context": registration.context ?? .null, "contextGiven": .bool(registration.context != nil),
                "createdAt": .int(Int(registration.createdAt.milliseconds)), "sequence": .int(registration.sequence),
                "notified": registration.notifiedValue, "throttle": .int(registration.throttle),
                "windowEnd": registration.windowEnd.map { .int(Int($0.milliseconds)) } ?? .null,
                "folded": registration.folded.map { folded in
                    ["old": folded.old, "revision": .int(folded.revision), "by": folded.by.map(JSON.string) ?? .null]
                } ?? .null,
            ]
        case .subscription(let subscription):
            return [
                "observer": .string(subscription.observerID),
                "name": subscription.target.name.map(JSON.string) ?? .null,
                "object": subscription.target.object.map(JSON.string) ?? .null,
                "createdAt": .int(Int(subscription.createdAt.milliseconds)), "sequence": .int(subscription.sequence),
            ]
        case .query(let query, let definition):
            return [
                "observer": .string(query.observerID), "definition": .object(definition),
                "options": .array(query.options.nameList.map(JSON.string)), "context": query.context ?? .null,
                "contextGiven": .bool(query.context != nil), "createdAt": .int(Int(query.createdAt.milliseconds)),
                "sequence": .int(query.sequence), "throttle": .int(query.throttle),
                "windowEnd": query.windowEnd.map { .int(Int($0.milliseconds)) } ?? .null,
                "foldedRevision": query.foldedRevision.map(JSON.int) ?? .null,
                "sent": query.sent.map { sent in
                    [
                        "revision": .int(sent.revision), "total": .int(sent.total),
                        "window": .array(
                            sent.window.map { .array([.string($0.id), .array($0.selected)]) }),
                    ]
                } ?? .null,
            ]
        case .token(let token):
            return [
                "name": .string(token.name), "secretHash": .string(token.secretHash), "scopes": token.access.grant.json,
                "client": token.access.client.map(JSON.string) ?? .null,
                "createdAt": .int(Int(token.createdAt.milliseconds)),
                "expiresAt": token.expiresAt.map { .int(Int($0.milliseconds)) } ?? .null,
            ]
        case .endedToken(let ended, let forgetAt):
            return [
                "ended": .string(ended.reason), "secretHash": ended.secretHash.map(JSON.string) ?? .null,
                "forgetAt": .int(Int(forgetAt)),
            ]
        case .lastEventID(let lastID, let pending):
            guard !pending.isEmpty else { return ["lastEventId": .int(lastID)] }
            return [
                "lastEventId": .int(lastID),
                "pending": .array(
                    pending.map { event in
                        [
                            "id": .int(event.id), "event": .string(event.name), "revision": .int(event.revision),
                            "data": .string(String(decoding: event.data, as: UTF8.self)),
                        ]
                    }),
            ]
        case .idempotency(let entry):
            let answer = entry.answer
            return [
                "fingerprint": .string(entry.fingerprint), "expires": .int(Int(entry.expires)),
                "sequence": .int(entry.sequence),
                "status": .int(answer.status), "contentType": .string(answer.contentType),
                "headers": .array(answer.headers.map { .array([.string($0.name), .string($0.value)]) }),
                "body": .string(String(decoding: answer.body, as: UTF8.self)),
            ]
        case .queue(let queue):
            return [
                "entries": .array(
                    queue.entries.map { entry in
                        [
                            "name": .string(entry.name), "object": entry.object.map(JSON.string) ?? .null,
                            "userInfo": entry.userInfo ?? .null, "style": .string(entry.style.rawValue),
                            "enqueuedAt": .int(Int(entry.enqueuedAt.milliseconds)),
                            "by": entry.by.map(JSON.string) ?? .null,
                        ]
                    })
            ]
        }
    }
}

/// Typed reads of a stored document's fields; a missing or mistyped field is a `PersistenceError`.
struct StoredDocument {
    let row: PersistedRow
    let members: JSONObject

    init(_ row: PersistedRow) throws(PersistenceError) {
        self.row = row
        let parsed: JSON
        do {
            parsed = try JSONParser.parse(row.document ?? [])
        } catch {
            throw PersistenceError(kind: row.kind, id: row.id, reason: error.message)
        }
        guard case .object(let members) = parsed else {
            throw PersistenceError(kind: row.kind, id: row.id, reason: "not an object")
        }
        self.members = members
    }

    func failure(_ reason: String) -> PersistenceError { PersistenceError(kind: row.kind, id: row.id, reason: reason) }

    func value(_ key: String) throws(PersistenceError) -> JSON {
        guard let value = members[key] else { throw failure("no '\(key)'") }
        return value
    }

    func int(_ key: String) throws(PersistenceError) -> Int {
        guard case .int(let value) = try value(key) else { throw failure("'\(key)' is not an integer") }
        return value
    }

    func string(_ key: String) throws(PersistenceError) -> String {
        guard case .string(let value) = try value(key) else { throw failure("'\(key)' is not a string") }
        return value
    }

    /// A string or null.
    func optionalString(_ key: String) throws(PersistenceError) -> String? {
        switch try value(key) {
        case .null: return nil
        case .string(let value): return value
        default: throw failure("'\(key)' is not a string or null")
        }
    }

    func bool(_ key: String) throws(PersistenceError) -> Bool {
        guard case .bool(let value) = try value(key) else { throw failure("'\(key)' is not a boolean") }
        return value
    }

    func timestamp(_ key: String) throws(PersistenceError) -> Timestamp {
        Timestamp(milliseconds: Int64(try int(key)))
    }

    func strings(_ key: String) throws(PersistenceError) -> [String] {
        guard case .array(let items) = try value(key) else { throw failure("'\(key)' is not an array") }
        var strings: [String] = []
        for item in items {
            guard case .string(let text) = item else { throw failure("'\(key)' holds a non-string") }
            strings.append(text)
        }
        return strings
    }

    /// Runs a check of the core on stored data; its refusal becomes this row's error.
    func checked<T>(_ body: () throws(CoreError) -> T) throws(PersistenceError) -> T {
        do {
            return try body()
        } catch {
            throw failure(error.message)
        }
    }

    func object(_ key: String) throws(PersistenceError) -> JSONObject {
        guard case .object(let value) = try value(key) else { throw failure("'\(key)' is not an object") }
        return value
    }
}
