// MARK: - The notification center

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

extension Store {
    /// Subscribes an observer (deduplicated per (name, object)).
    public func subscribe(observerID: String, name: String?, object: String?) throws(CoreError) -> (
        subscription: SubscriptionSnapshot, deduplicated: Bool, revision: Int?
    ) {
        let now = Moment.now()
        return try change { state throws(CoreError) in
            try state.subscribe(observerID: observerID, name: name, object: object, at: now)
        }
    }

    /// Removes subscriptions by id, or by name and object (removeObserver:name:object:).
    public func unsubscribe(
        observerID: String, subscriptionID: String? = nil, name: String? = nil, object: String? = nil
    ) throws(CoreError) -> Int? {
        try change { state throws(CoreError) in
            try state.unsubscribe(observerID: observerID, subscriptionID: subscriptionID, name: name, object: object)
        }
    }

    /// Posts now, or queues (with coalescing on `coalesce`: "name", "object").
    public func post(
        name: String, object: String?, userInfo: JSON?, style: PostingStyle = .now, coalesce: [String] = []
    ) throws(CoreError) -> PostOutcome {
        try StoreState.checkNotification(name: name, object: object)
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
            let result = try change { state in state.post(name: name, object: object, userInfo: userInfo) }
            return .delivered(revision: result.revision, count: result.delivered)
        case .asap: queueStyle = .asap
        case .idle: queueStyle = .idle
        }
        let now = Moment.now()
        let coalesced = try change { state throws(CoreError) in
            try state.enqueue(
                name: name, object: object, userInfo: userInfo, style: queueStyle, coalescing: mask, at: now)
        }
        return .queued(coalesced: coalesced)
    }

    /// When the oldest queued posting of a style was queued.
    public func oldestQueued(_ style: PostingStyle) -> ContinuousClock.Instant? {
        state.withLock { state in
            switch style {
            case .now: nil
            case .asap: state.notificationQueue.oldest(.asap)
            case .idle: state.notificationQueue.oldest(.idle)
            }
        }
    }

    /// Delivers the queued postings of a style; returns how many.
    @discardableResult
    public func flushQueued(_ style: PostingStyle) -> Int {
        (try? change(needsDisk: false) { state in
            switch style {
            case .now: 0
            case .asap: state.flushQueue(.asap)
            case .idle: state.flushQueue(.idle)
            }
        }) ?? 0
    }

    /// The subscription count, for `/v1/stats`.
    public var subscriptionCount: Int { state.withLock { $0.subscriptions.count } }
}
