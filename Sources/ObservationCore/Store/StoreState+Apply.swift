// MARK: - apply: the one way the state changes

extension StoreState {
    /// Applies a command: returns its answer, and leaves in `effects` what to perform after the lock (events
    /// for the logs, logs to close, the timer to tell). Throws the contract's error, having
    /// changed nothing, when the command is refused.
    ///
    /// Deterministic: the result depends on the state and the command only. Time is the
    /// command's, but never earlier than the last command's (the clock does not go back).
    mutating func apply(_ command: Command) -> Result<Outcome, CoreError> {
        assert(effects.isEmpty, "the effects of the command before were taken (`Outbox.enqueue(taking:)`)")
        let before = clock
        let time = max(clock, command.time)
        clock = time
        by = command.by
        defer { by = nil }
        let result = Result { () throws(CoreError) in
            let principal = command.principal
            let access = try authorize(command.action, principal, at: time)
            guard let claim = command.idempotency else {
                return try perform(command.action, by: principal, access, at: time)
            }
            // A journaled command was a first application: its replay decides nothing anew.
            if !replaying, let kept = try keptAnswer(claim, for: command.action, at: time) { return kept }
            let outcome = try perform(command.action, by: principal, access, at: time)
            keep(outcome, for: claim, at: time)
            return outcome
        }
        if !queryChanges.isEmpty {
            if case .success = result { flushQueryChanges() } else { queryChanges = [] }
        }
        switch result {
        case .failure, .success(.replayed):
            clock = before  // a refused or replayed command changes nothing, not even the clock
        case .success where !command.changesState:
            clock = before  // nor does one that is not journaled (a barrier): a restart must see the same clock
        case .success:
            forgetExpiredKeys(at: time)
        }
        effects.revision = revision
        return result
    }

    /// `access`: what the command's principal may do, as `authorize` decided (nil: everything).
    mutating func perform(
        _ action: Command.Action, by principal: Principal, _ access: Access?, at time: Timestamp
    ) throws(CoreError)
        -> Outcome
    {
        switch action {
        case .defineClass(let name, let definition):
            let (snapshot, created) = try defineClass(name, definition: definition)
            return .classDefined(snapshot, created: created)
        case .deleteClass(let name):
            return .removed(revision: try deleteClass(name))
        case .createObject(let id, let className, let values, let generatedID, let owner):
            return .objectCreated(
                try createObject(
                    id: id, className: className, values: values, generatedID: generatedID, owner: owner, at: time))
        case .patch(let object, let values, let ifRevision):
            return .revision(try patch(values, of: object, ifRevision: ifRevision))
        case .deleteObject(let object):
            return .objectDeleted(try deleteObject(object))
        case .setValue(let object, let keyPath, let value, let ifRevision):
            return .revision(try setValue(value, at: keyPath, of: object, ifRevision: ifRevision))
        case .mutate(let object, let keyPath, let kind, let indexes, let values, let ifRevision):
            return .revision(
                try mutate(kind, indexes: indexes, values: values, at: keyPath, of: object, ifRevision: ifRevision))
        case .notify(let object, let keyPaths):
            return .revision(try notify(object, keyPaths: keyPaths))
        case .transaction(let transaction):
            return .transaction(try applyTransaction(transaction, by: principal, access, at: time))
        case .createObserver(
            let id, let tokenHash, let name, let lease, let retainObserved, let replay, let client, let onRemove,
            let deliver):
            var settings = ObserverSettings(
                name: name, lease: lease, retainObserved: retainObserved, replay: replay, client: client)
            settings.deliver = deliver
            return .observerCreated(
                try createObserver(
                    id: id, tokenHash: tokenHash, settings: settings, by: principal, access: access, onRemove: onRemove,
                    at: time))
        case .acknowledge(let observer, let through):
            try acknowledge(observer, through: through)
            return .done
        case .deleteObserver(let observer):
            return .removed(revision: try removeObserver(observer, reason: "deleted"))
        case .keepalive(let observer):
            return .leaseRenewed(expiresAt: try keepalive(observer, at: time))
        case .progress(let observer):
            guard let log = observers[observer]?.log else { throw CoreError.notFound("observer", observer) }
            effects.barriers.append((log, revision))
            return .barrier(revision: revision)
        case .observe(
            let observer, let object, let keyPaths, let options, let context, let registrationIDs, let throttle):
            return .observed(
                try observe(
                    observerID: observer, objectID: object, keyPaths: keyPaths, optionNames: options, context: context,
                    registrationIDs: registrationIDs, throttle: throttle ?? 0, at: time))
        case .unobserve(let observer, let registration, let object, let keyPath):
            return .removed(
                revision: try unobserve(
                    observerID: observer, registrationID: registration, objectID: object, keyPath: keyPath))
        case .query(let observer, let definition, let options, let context, let throttle, let queryID):
            return .queried(
                try registerQuery(
                    observerID: observer, definition: definition, optionNames: options, context: context,
                    throttle: throttle ?? 0, queryID: queryID, at: time))
        case .unquery(let observer, let query):
            return .removed(revision: try unregisterQuery(observerID: observer, queryID: query))
        case .subscribe(let observer, let name, let object, let subscriptionID):
            let result = try subscribe(
                observerID: observer, name: name, object: object, subscriptionID: subscriptionID, at: time)
            return .subscribed(result.subscription, deduplicated: result.deduplicated, revision: result.revision)
        case .unsubscribe(let observer, let subscription, let name, let object):
            return .removed(
                revision: try unsubscribe(
                    observerID: observer, subscriptionID: subscription, name: name, object: object))
        case .post(let name, let object, let userInfo, let posting, let coalesce):
            return .posted(
                try post(name: name, object: object, userInfo: userInfo, posting: posting, coalesce: coalesce, at: time)
            )
        case .expireLeases:
            return .expired(expireLeases(at: time))
        case .deliverQueued(let posting):
            return .delivered(try deliverQueued(posting))
        case .flushThrottled:
            return .delivered(flushThrottled(at: time))
        case .openStream(let observer, let holder):
            return .streamOpened(try openStream(of: observer, holder: holder))
        case .closeStream(let observer, let holder):
            closeStream(of: observer, holder: holder, at: time)
            return .done
        case .nodeDown(let holder):
            observers.nodeDown(holder, at: time)
            effects.timerMustLook = true
            return .done
        case .restart:
            observers.restart(at: time)
            effects.timerMustLook = true
            return .done
        case .createToken(let id, let secretHash, let name, let scopes, let ttl, let client):
            return .token(
                try createToken(
                    id: id, secretHash: secretHash, name: name, scopes: scopes, ttl: ttl, client: client, at: time),
                created: true)
        case .changeToken(let id, let scopes, let ttl):
            return .token(try changeToken(id, scopes: scopes, ttl: ttl, at: time), created: false)
        case .revokeToken(let id):
            return .removed(revision: try revokeToken(id, at: time))
        case .expireTokens:
            return .expired(expireTokens(at: time))
        }
    }
}

// MARK: - Idempotency keys (section 7.3)

extension StoreState {
    /// The answer a key keeps for the same request (`replayed`), nil for a key not held;
    /// `idempotencyKeyReused` for the same key with another request.
    fileprivate func keptAnswer(_ claim: IdempotencyClaim, for action: Command.Action, at time: Timestamp)
        throws(CoreError) -> Outcome?
    {
        guard let entry = idempotency.entry(claim.key, at: time.milliseconds) else { return nil }
        if case .transaction(let transaction) = action, let id = transaction.id, entry.fingerprint != claim.fingerprint
        {
            throw CoreError(
                .idempotencyKeyReused, "transaction id '\(id)' was used for another transaction in the last 10 minutes",
                details: ["id": .string(id)])
        }
        guard entry.fingerprint == claim.fingerprint else {
            throw CoreError(
                .idempotencyKeyReused,
                "this Idempotency-Key was used for a different request in the last 10 minutes",
                details: ["key": .string(claim.key)])
        }
        return .replayed(entry.answer)
    }

    /// Keeps the answer of a command that succeeded under a key.
    fileprivate mutating func keep(_ outcome: Outcome, for claim: IdempotencyClaim, at time: Timestamp) {
        let answer = renderer.render(outcome, claim.answerMembers)
        idempotency.insert(claim.key, fingerprint: claim.fingerprint, answer: answer, at: time.milliseconds)
        journal.mark(.idempotency, claim.key)
    }

    /// Lets keys go whose 10 minutes are over by `time`, and the oldest past the limits (at
    /// every change: a constant-time look when none is due).
    fileprivate mutating func forgetExpiredKeys(at time: Timestamp) {
        let removed = idempotency.prune(
            at: time.milliseconds, maxEntries: limits.maxIdempotencyKeys, maxBytes: limits.maxIdempotencyBytes)
        for key in removed { journal.mark(.idempotency, key) }
    }
}
