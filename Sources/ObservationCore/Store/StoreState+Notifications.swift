// MARK: - The notification center: subscriptions, posting, the queue

/// How a notification is posted (NSPostingStyle).
public enum PostingStyle: String, Sendable, CaseIterable {
    /// Delivered before the answer.
    case now
    /// Queued; delivered at the end of the current batch.
    case asap
    /// Queued; delivered once the server is idle (at most a second later).
    case idle
}

/// What posting answered.
public enum PostOutcome: Sendable, Equatable {
    case delivered(revision: Int, count: Int)
    case queued(coalesced: Int)
}

extension StoreState {
    /// Subscribes an observer to a name, an object, both or neither (addObserver:selector:name:object:).
    /// Returns the subscription, whether it already existed, and the revision if one was taken.
    mutating func subscribe(
        observerID: String, name: String?, object: String?, subscriptionID: String, at time: Timestamp
    ) throws(CoreError) -> (subscription: SubscriptionSnapshot, deduplicated: Bool, revision: Int?) {
        guard observers[observerID] != nil else { throw CoreError.notFound("observer", observerID) }
        try Self.checkNotification(name: name, object: object)
        let target = SubscriptionTarget(name: name, object: object)
        if let existing = center.subscription(of: observerID, at: target) { return (existing.snapshot, true, nil) }
        guard registrationCount(of: observerID) < limits.maxRegistrationsPerObserver
        else {
            throw CoreError(
                .limitExceeded,
                "observer \(observerID) may hold at most \(limits.maxRegistrationsPerObserver) registrations",
                details: ["limit": .int(limits.maxRegistrationsPerObserver)])
        }
        let subscription = Subscription(
            id: Self.freshID(subscriptionID) { center[$0] != nil }, observerID: observerID, target: target,
            createdAt: time, sequence: center.nextSequence())
        let revision = nextRevision()
        center.insert(subscription)
        journal.mark(.subscription, subscription.id)
        emitAdmin(
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
        observerID: String, subscriptionID: String?, name: String?, object: String?
    ) throws(CoreError) -> Int? {
        _ = try observers.existing(observerID)
        let matching = center.owned(by: observerID).filter {
            (subscriptionID == nil || $0.id == subscriptionID) && $0.target.matches(name: name, object: object)
        }
        if matching.isEmpty {
            if subscriptionID == nil, name == nil, object == nil { return nil }
            throw CoreError(.notFound, "observer \(observerID) has no such subscription")
        }
        let revision = nextRevision()
        for subscription in matching { removeSubscription(subscription, reason: "unobserved", revision: revision) }
        return revision
    }

    mutating func removeSubscription(_ subscription: Subscription, reason: String, revision: Int) {
        center.remove(subscription.id)
        journal.mark(.subscription, subscription.id)
        emitCancelled(
            "subscription", subscription.id, reason: reason, revision: revision, to: subscription.observerID)
        emitAdmin(
            "subscriptionRemoved",
            [
                "observer": .string(subscription.observerID), "subscription": .string(subscription.id),
                "reason": .string(reason), "revision": .int(revision),
            ])
    }

    /// Posts now, or queues (with coalescing on `coalesce`: "name", "object").
    mutating func post(
        name: String, object: String?, userInfo: JSON?, posting: String, coalesce: [String], at time: Timestamp
    ) throws(CoreError) -> PostOutcome {
        guard let style = PostingStyle(rawValue: posting) else {
            throw CoreError(.invalidRequest, "posting must be now, asap or idle, not '\(posting)'")
        }
        try Self.checkNotification(name: name, object: object)
        var mask: NotificationQueue.CoalescingMask = []
        for field in coalesce {
            switch field {
            case "name": mask.insert(.name)
            case "object": mask.insert(.object)
            default: throw CoreError.unknownField(field, in: "coalesce", allowed: ["name", "object"])
            }
        }
        let queueStyle: NotificationQueue.Style
        switch style {
        case .now:
            guard mask.isEmpty else {
                throw CoreError(.invalidRequest, "coalesce applies to queued postings (asap, idle)")
            }
            let revision = nextRevision()
            return .delivered(
                revision: revision, count: deliver(name: name, object: object, userInfo: userInfo, revision: revision))
        case .asap: queueStyle = .asap
        case .idle: queueStyle = .idle
        }
        let coalesced = try center.queue.enqueue(
            NotificationQueue.Entry(
                name: name, object: object, userInfo: userInfo, style: queueStyle, enqueuedAt: time, by: by),
            coalescing: mask, maxEntries: limits.maxQueuedNotifications, maxBytes: limits.maxQueuedNotificationBytes)
        journal.mark(.queue, "queue")
        effects.timerMustLook = true
        return .queued(coalesced: coalesced)
    }

    /// Delivers a notification now: one `notification` event per matching subscription, under
    /// `revision` (taken). Returns how many subscriptions it reached.
    @discardableResult
    mutating func deliver(name: String, object: String?, userInfo: JSON?, revision: Int) -> Int {
        let matched = center.matching(name: name, object: object)
        let by = self.by
        let tail = JSONWriter.encode { tail in
            tail.raw(",\"name\":")
            tail.write(name)
            tail.raw(",\"object\":")
            tail.write(object.map(JSON.string) ?? .null)
            tail.raw(",\"userInfo\":")
            tail.write(userInfo ?? .null)
            tail.raw(",\"revision\":")
            tail.write(revision)
            tail.writeCause(by: by, tx: tx)
            tail.raw("}")
        }
        for subscription in matched {
            let bytes = JSONWriter.encode { writer in
                writer.raw("{\"subscription\":")
                writer.write(subscription.id)
                writer.raw(tail)
            }
            emit("notification", bytes, to: subscription.observerID)
        }
        emitAdmin(
            "notificationPosted",
            [
                "name": .string(name), "object": object.map(JSON.string) ?? .null, "userInfo": userInfo ?? .null,
                "delivered": .int(matched.count), "revision": .int(revision),
            ])
        return matched.count
    }

    /// Delivers every queued posting of `posting` (`asap`, `idle`), in order, each under its own revision.
    mutating func deliverQueued(_ posting: String) throws(CoreError) -> Int {
        guard let style = NotificationQueue.Style(rawValue: posting) else {
            throw CoreError(.invalidRequest, "queued postings are asap or idle, not '\(posting)'")
        }
        let entries = center.queue.take(style)
        if !entries.isEmpty { journal.mark(.queue, "queue") }
        for entry in entries {
            // Delivered later, but caused by its post: its events carry the poster's name.
            by = entry.by
            deliver(name: entry.name, object: entry.object, userInfo: entry.userInfo, revision: nextRevision())
        }
        by = nil
        return entries.count
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
