// MARK: - Registrations: observe, unobserve

/// What `observe` answers: each registration asked for, and whether it already existed.
public struct ObserveResult: Sendable {
    public let registrations: [(registration: RegistrationSnapshot, deduplicated: Bool)]
    /// The revision taken, nil when every pair was already registered (nothing changed).
    public let revision: Int?
}

extension StoreState {
    /// Registers `keyPaths` of `objectID` for an observer (observe:keyPaths:options:context:).
    /// A pair already registered is answered with the existing registration (first wins). New
    /// registrations take the ids the command carries, in order.
    mutating func observe(
        observerID: String, objectID: String, keyPaths: [String], optionNames: [String], context: JSON?,
        registrationIDs: [String], throttle: Int = 0, at time: Timestamp
    ) throws(CoreError) -> ObserveResult {
        let options = try ObservationOptions(names: optionNames)
        guard !keyPaths.isEmpty else { throw CoreError(.invalidRequest, "give 'keyPath' or a non-empty 'keyPaths'") }
        try Self.checkThrottle(throttle, options: options)
        guard let observer = observers[observerID] else { throw CoreError.notFound("observer", observerID) }
        if options.contains(.skipOwn), observer.client == nil {
            throw CoreError(
                .invalidRequest, "skipOwn needs an observer created with a 'client' name",
                details: ["field": "options"])
        }
        let object = try graph.existingObject(objectID)
        var paths: [KeyPath] = []
        var seen = Set<String>()
        for text in keyPaths {
            let path = try KeyPath(text)
            try graph.checker.check(path, from: object.className)
            if seen.insert(path.description).inserted { paths.append(path) }
        }
        let fresh = paths.filter {
            registrations.registration(
                of: observerID, at: RegistrationTarget(objectID: objectID, keyPath: $0.description)) == nil
        }
        let existing = registrationCount(of: observerID)
        guard existing + fresh.count <= limits.maxRegistrationsPerObserver else {
            throw CoreError(
                .limitExceeded,
                "observer \(observerID) may hold at most \(limits.maxRegistrationsPerObserver) registrations",
                details: ["limit": .int(limits.maxRegistrationsPerObserver)])
        }
        guard fresh.count <= registrationIDs.count else {
            throw CoreError(.invalidRequest, "the command carries too few registration ids")
        }
        let revision = fresh.isEmpty ? nil : nextRevision()
        var answer: [(RegistrationSnapshot, deduplicated: Bool)] = []
        var newIDs = registrationIDs.makeIterator()
        for path in paths {
            let target = RegistrationTarget(objectID: objectID, keyPath: path.description)
            if let existing = registrations.registration(of: observerID, at: target) {
                answer.append((existing.snapshot, true))
                continue
            }
            guard let revision, let candidate = newIDs.next() else { continue }
            let registration = addRegistration(
                id: Self.freshID(candidate) { registrations[$0] != nil }, observerID: observerID, objectID: objectID,
                path: path, options: options, context: context, throttle: throttle, at: time)
            answer.append((registration.snapshot, false))
            emitAdmin(
                "observationAdded",
                [
                    "observer": .string(observerID), "observation": .object(registration.snapshot.json),
                    "revision": .int(revision),
                ])
            if options.contains(.initial) {
                var record = ChangeRecord(revision: revision)
                record.flag = .initial
                record.new = options.contains(.new) ? registration.value : JSON?.none  // not `nil`: that is JSON null
                record.by = by
                emit("change", ChangeRecord.encode(registration, record: record), to: observerID)
            }
        }
        return ObserveResult(registrations: answer, revision: revision)
    }

    private mutating func addRegistration(
        id: String, observerID: String, objectID: String, path: KeyPath, options: ObservationOptions, context: JSON?,
        throttle: Int, at time: Timestamp
    ) -> Registration {
        var unbound = Registration(
            id: id, observerID: observerID, objectID: objectID, keyPath: path, options: options, context: context,
            createdAt: time, sequence: registrations.nextSequence(), derivedPolicy: nil, value: .null,
            notifiedValue: .null, dependencies: [], location: nil)
        unbound.throttle = throttle
        let registration = bind(unbound)
        registrations.insert(registration)
        journal.mark(.registration, registration.id)
        return registration
    }

    /// `throttle`: 0–60000 ms, and not with `prior` (a prior record cannot be folded).
    static func checkThrottle(_ throttle: Int, options: ObservationOptions) throws(CoreError) {
        guard (0...60_000).contains(throttle) else {
            throw CoreError(.invalidRequest, "throttle is 0–60000 milliseconds", details: ["field": "throttle"])
        }
        if throttle > 0, options.contains(.prior) {
            throw CoreError(
                .invalidRequest, "prior is not allowed with throttle: a prior record cannot be folded",
                details: ["field": "throttle"])
        }
    }

    /// Removes registrations (by id, or by object and key path; none given: all). Nothing
    /// matching is 404, except unobserveAll on an observer with none, which changes nothing.
    mutating func unobserve(
        observerID: String, registrationID: String?, objectID: String?, keyPath: String?
    ) throws(CoreError) -> Int? {
        _ = try observers.existing(observerID)
        let matching = registrations.owned(by: observerID).filter { registration in
            (registrationID == nil || registration.id == registrationID)
                && (objectID == nil || registration.objectID == objectID)
                && (keyPath == nil || registration.keyPath.description == keyPath)
        }
        if matching.isEmpty {
            if registrationID == nil, objectID == nil, keyPath == nil { return nil }
            throw CoreError(
                .notFound, "observer \(observerID) has no such registration",
                details: JSONObject(
                    [("observation", registrationID), ("object", objectID), ("keyPath", keyPath)]
                        .compactMap { key, value in value.map { (key, JSON.string($0)) } }))
        }
        let revision = nextRevision()
        for registration in matching { removeRegistration(registration, reason: "unobserved", revision: revision) }
        releaseObjects(matching.map(\.objectID), revision: revision)
        return revision
    }

    /// Removes one registration from every index, with its `cancelled` event. From the moment
    /// this returns, no record for it is produced (the fence).
    mutating func removeRegistration(_ registration: Registration, reason: String, revision: Int) {
        registrations.remove(registration.id)
        throttled.cancel(registration.id)
        journal.mark(.registration, registration.id)
        emitCancelled("observation", registration.id, reason: reason, revision: revision, to: registration.observerID)
        emitAdmin(
            "observationRemoved",
            [
                "observer": .string(registration.observerID), "observation": .string(registration.id),
                "object": .string(registration.objectID), "keyPath": .string(registration.keyPath.description),
                "reason": .string(reason), "revision": .int(revision),
            ])
    }
}

extension RegistrationSnapshot {
    /// `{"id", "object", "keyPath", "options", "context", "createdAt"}`.
    public var json: JSONObject {
        let members: JSONObject = [
            "id": .string(id), "object": .string(objectID), "keyPath": .string(keyPath),
            "options": .array(options.nameList.map(JSON.string)), "context": context ?? .null,
            "createdAt": .string(createdAt.rfc3339),
        ]
        return throttle > 0 ? members.adding("throttle", .int(throttle)) : members
    }
}
