// MARK: - Registrations: observe, unobserve, retain

extension StoreState {
    /// What `observe` did: the registrations asked for (new or existing) and the revision, if it took one.
    struct ObserveOutcome {
        var registrations: [(RegistrationSnapshot, deduplicated: Bool)] = []
        var revision: Int?
    }

    /// Registers `keyPaths` of `objectID` for an observer (observe:keyPaths:options:context:).
    /// A pair already registered is answered with the existing registration (first wins).
    mutating func observe(
        observerID: String, objectID: String, keyPaths: [String], options: ObservationOptions, context: JSON?,
        at now: Moment
    ) throws(CoreError) -> ObserveOutcome {
        guard !keyPaths.isEmpty else { throw CoreError(.invalidRequest, "give 'keyPath' or a non-empty 'keyPaths'") }
        // Read through `observers[id]`, never a local copy (see `subscribe`).
        guard observers[observerID] != nil else { throw CoreError.notFound("observer", observerID) }
        let object = try existingObject(objectID)
        var paths: [KeyPath] = []
        for text in keyPaths {
            let path = try KeyPath(text)
            try checker.check(path, from: object.className)
            paths.append(path)
        }
        let fresh = Set(paths.map(\.description)).filter {
            observers[observerID]?.registrationsByTarget[RegistrationTarget(objectID: objectID, keyPath: $0)] == nil
        }
        guard heldRegistrations(of: observerID) + fresh.count <= limits.maxRegistrationsPerObserver else {
            throw CoreError(
                .limitExceeded,
                "observer \(observerID) may hold at most \(limits.maxRegistrationsPerObserver) registrations",
                details: ["limit": .int(limits.maxRegistrationsPerObserver)])
        }
        var outcome = ObserveOutcome()
        if !fresh.isEmpty { outcome.revision = nextRevision() }
        var seen = Set<String>()
        for path in paths where seen.insert(path.description).inserted {
            let target = RegistrationTarget(objectID: objectID, keyPath: path.description)
            if !fresh.contains(path.description), let existing = observers[observerID]?.registrationsByTarget[target],
                let registration = registrations[existing]
            {
                outcome.registrations.append((registration.snapshot, true))
                continue
            }
            guard let revision = outcome.revision else { continue }
            let registration = addRegistration(
                observerID: observerID, objectID: objectID, path: path, options: options, context: context, at: now)
            outcome.registrations.append((registration.snapshot, false))
            appendAdmin(
                "observationAdded",
                [
                    "observer": .string(observerID), "observation": .object(registration.snapshot.json),
                    "revision": .int(revision),
                ])
            if options.contains(.initial) {
                var record = ChangeRecord(revision: revision)
                record.flag = .initial
                record.new = options.contains(.new) ? registration.value : JSON?.none  // not `nil`: that is JSON null
                appendEvent("change", ChangeRecord.encode(registration, tail: record.encodedTail()), to: observerID)
            }
        }
        return outcome
    }

    private mutating func addRegistration(
        observerID: String, objectID: String, path: KeyPath, options: ObservationOptions, context: JSON?, at now: Moment
    ) -> Registration {
        var id = RandomID.make("reg_")
        while registrations[id] != nil { id = RandomID.make("reg_") }
        registrationSequence += 1
        return insertRegistration(
            Registration(
                id: id, observerID: observerID, objectID: objectID, keyPath: path, options: options, context: context,
                createdAt: now.wall, sequence: registrationSequence, derivedPolicy: nil, value: .null,
                notifiedValue: .null, dependencies: [], location: nil))
    }

    /// Binds a registration (its current value, its dependencies) and enters it in every index.
    mutating func insertRegistration(_ unbound: Registration) -> Registration {
        var registration = unbound
        let className = objects[registration.objectID]?.className
        registration.derivedPolicy = checker.finalProperty(of: registration.keyPath, from: className).flatMap {
            $0.computed == nil ? nil : $0.notify
        }
        let (value, trace) = evaluate(registration)
        registration.value = value
        registration.notifiedValue = value
        rebind(&registration, to: trace)
        registrations[registration.id] = registration
        journal.mark(.registration, registration.id)
        registrationsByObject[registration.objectID, default: []].insert(registration.id)
        observers[registration.observerID]?.registrationsByTarget[
            RegistrationTarget(objectID: registration.objectID, keyPath: registration.keyPath.description)] =
            registration.id
        return registration
    }

    /// Removes registrations (by id, or by object and key path; none given: all). Nothing
    /// matching is 404, except unobserveAll on an observer with none, which changes nothing.
    mutating func unobserve(
        observerID: String, registrationID: String? = nil, objectID: String? = nil, keyPath: String? = nil
    ) throws(CoreError) -> Int? {
        let observer = try existingObserver(observerID)
        let owned = observer.registrationsByTarget.values.compactMap { registrations[$0] }
        let matching = owned.filter { registration in
            (registrationID == nil || registration.id == registrationID)
                && (objectID == nil || registration.objectID == objectID)
                && (keyPath == nil || registration.keyPath.description == keyPath)
        }.sorted { $0.sequence < $1.sequence }
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
        var emptied = registration
        rebind(&emptied, to: DependencyTrace())
        registrations[registration.id] = nil
        journal.mark(.registration, registration.id)
        registrationsByObject[registration.objectID]?.remove(registration.id)
        if registrationsByObject[registration.objectID]?.isEmpty == true {
            registrationsByObject[registration.objectID] = nil
        }
        observers[registration.observerID]?.registrationsByTarget[
            RegistrationTarget(objectID: registration.objectID, keyPath: registration.keyPath.description)] = nil
        appendCancelled("observation", registration.id, reason: reason, revision: revision, to: registration.observerID)
        appendAdmin(
            "observationRemoved",
            [
                "observer": .string(registration.observerID), "observation": .string(registration.id),
                "object": .string(registration.objectID), "keyPath": .string(registration.keyPath.description),
                "reason": .string(reason), "revision": .int(revision),
            ])
    }

    /// The `cancelled` event of a removed registration or subscription (`field` names which).
    mutating func appendCancelled(
        _ field: StaticString, _ id: String, reason: String, revision: Int, to observerID: String
    ) {
        var writer = JSONWriter(capacity: 80)
        writer.raw("{\"")
        writer.raw(field)
        writer.raw("\":")
        writer.write(id)
        writer.raw(",\"reason\":")
        writer.write(reason)
        writer.raw(",\"revision\":")
        writer.write(revision)
        writer.raw("}")
        appendEvent("cancelled", writer.bytes, to: observerID)
    }

    // MARK: Retain and release

    /// Observers with `retainObserved` that observe `objectID` (they keep it alive).
    func retainers(of objectID: String) -> [String] {
        let ids = (registrationsByObject[objectID] ?? []).compactMap { registrations[$0]?.observerID }
        return Set(ids).filter { observers[$0]?.retainObserved == true }.sorted()
    }

    /// Deletes the objects among `objectIDs` whose deletion waited for their last retainer.
    mutating func releaseObjects(_ objectIDs: [String], revision: Int) {
        for id in Set(objectIDs) where pendingRelease.contains(id) && retainers(of: id).isEmpty {
            removeObject(id, revision: revision)
        }
    }
}

extension RegistrationSnapshot {
    /// `{"id", "object", "keyPath", "options", "context", "createdAt"}`.
    public var json: JSONObject {
        [
            "id": .string(id), "object": .string(objectID), "keyPath": .string(keyPath),
            "options": .array(options.nameList.map(JSON.string)), "context": context ?? .null,
            "createdAt": .string(createdAt.rfc3339),
        ]
    }
}
