// MARK: - The notification center: subscriptions, posting, the queue

extension StoreState {
    /// Subscribes an observer to a name, an object, both or neither (addObserver:selector:name:object:).
    /// Returns the subscription, whether it already existed, and the revision if one was taken.
    mutating func subscribe(
        observerID: String, name: String?, object: String?, at now: Moment
    ) throws(CoreError) -> (subscription: SubscriptionSnapshot, deduplicated: Bool, revision: Int?) {
        // Read through `observers[id]`, never a local copy: a copy alive across the insert below
        // would make the tables copy-on-write on every subscription (quadratic).
        guard observers[observerID] != nil else { throw CoreError.notFound("observer", observerID) }
        try Self.checkNotification(name: name, object: object)
        let target = SubscriptionTarget(name: name, object: object)
        if let existing = observers[observerID]?.subscriptionsByTarget[target],
            let subscription = subscriptions[existing]
        {
            return (subscription.snapshot, true, nil)
        }
        guard heldRegistrations(of: observerID) < limits.maxRegistrationsPerObserver else {
            throw CoreError(
                .limitExceeded,
                "observer \(observerID) may hold at most \(limits.maxRegistrationsPerObserver) registrations",
                details: ["limit": .int(limits.maxRegistrationsPerObserver)])
        }
        var id = RandomID.make("sub_")
        while subscriptions[id] != nil { id = RandomID.make("sub_") }
        registrationSequence += 1
        let subscription = Subscription(
            id: id, observerID: observerID, target: target, createdAt: now.wall, sequence: registrationSequence)
        let revision = nextRevision()
        subscriptions[id] = subscription
        journal.mark(.subscription, id)
        subscriptionIndex.insert(id, target)
        observers[observerID]?.subscriptionsByTarget[target] = id
        appendAdmin(
            "subscriptionAdded",
            [
                "observer": .string(observerID), "subscription": .object(subscription.snapshot.json),
                "revision": .int(revision),
            ])
        return (subscription.snapshot, false, revision)
    }

    /// Removes subscriptions by id, or by removeObserver:name:object: rules. Nothing matching
    /// is 404, except removing all from an observer with none, which changes nothing.
    mutating func unsubscribe(
        observerID: String, subscriptionID: String? = nil, name: String? = nil, object: String? = nil
    ) throws(CoreError) -> Int? {
        let observer = try existingObserver(observerID)
        let matching = observer.subscriptionsByTarget.values.compactMap { subscriptions[$0] }
            .filter {
                (subscriptionID == nil || $0.id == subscriptionID) && $0.target.matches(name: name, object: object)
            }
            .sorted { $0.sequence < $1.sequence }
        if matching.isEmpty {
            if subscriptionID == nil, name == nil, object == nil { return nil }
            throw CoreError(.notFound, "observer \(observerID) has no such subscription")
        }
        let revision = nextRevision()
        for subscription in matching { removeSubscription(subscription, reason: "unobserved", revision: revision) }
        return revision
    }

    mutating func removeSubscription(_ subscription: Subscription, reason: String, revision: Int) {
        subscriptions[subscription.id] = nil
        journal.mark(.subscription, subscription.id)
        subscriptionIndex.remove(subscription.id, subscription.target)
        observers[subscription.observerID]?.subscriptionsByTarget[subscription.target] = nil
        appendCancelled(
            "subscription", subscription.id, reason: reason, revision: revision, to: subscription.observerID)
        appendAdmin(
            "subscriptionRemoved",
            [
                "observer": .string(subscription.observerID), "subscription": .string(subscription.id),
                "reason": .string(reason), "revision": .int(revision),
            ])
    }

    /// Posts a notification now: one `notification` event per matching subscription, under
    /// one new revision. Returns the revision and how many subscriptions it reached.
    mutating func post(name: String, object: String?, userInfo: JSON?) -> (revision: Int, delivered: Int) {
        let revision = nextRevision()
        let matched = subscriptionIndex.matching(name: name, object: object).compactMap { subscriptions[$0] }
            .sorted { $0.sequence < $1.sequence }
        var tail = JSONWriter(capacity: 96)
        tail.raw(",\"name\":")
        tail.write(name)
        tail.raw(",\"object\":")
        tail.write(object.map(JSON.string) ?? .null)
        tail.raw(",\"userInfo\":")
        tail.write(userInfo ?? .null)
        tail.raw(",\"revision\":")
        tail.write(revision)
        tail.raw("}")
        for subscription in matched {
            var writer = JSONWriter(capacity: tail.bytes.count + 40)
            writer.raw("{\"subscription\":")
            writer.write(subscription.id)
            writer.raw(tail.bytes)
            appendEvent("notification", writer.bytes, to: subscription.observerID)
        }
        appendAdmin(
            "notificationPosted",
            [
                "name": .string(name), "object": object.map(JSON.string) ?? .null, "userInfo": userInfo ?? .null,
                "delivered": .int(matched.count), "revision": .int(revision),
            ])
        return (revision, matched.count)
    }

    /// Queues a posting (NSNotificationQueue); returns how many queued ones it coalesced.
    mutating func enqueue(
        name: String, object: String?, userInfo: JSON?, style: NotificationQueue.Style,
        coalescing mask: NotificationQueue.CoalescingMask, at now: Moment
    ) throws(CoreError) -> Int {
        try notificationQueue.enqueue(
            NotificationQueue.Entry(
                name: name, object: object, userInfo: userInfo, style: style, enqueuedAt: now.instant),
            coalescing: mask)
    }

    /// Delivers every queued posting of `style`, in order, each under its own revision.
    mutating func flushQueue(_ style: NotificationQueue.Style) -> Int {
        let entries = notificationQueue.take(style)
        for entry in entries { _ = post(name: entry.name, object: entry.object, userInfo: entry.userInfo) }
        return entries.count
    }

    /// Observations and subscriptions an observer holds (they share one limit).
    func heldRegistrations(of observerID: String) -> Int {
        (observers[observerID]?.registrationsByTarget.count ?? 0)
            + (observers[observerID]?.subscriptionsByTarget.count ?? 0)
    }

    /// Notification names: 1–256 printable characters; objects: any id string.
    static func checkNotification(name: String?, object: String?) throws(CoreError) {
        if let name, !Names.isValidNotificationName(name) {
            throw CoreError(
                .invalidName, "a notification name is 1–256 printable characters",
                details: ["name": .string(String(name.prefix(260)))])
        }
        if let object { try Names.checkID(object, "notification object") }
    }
}
