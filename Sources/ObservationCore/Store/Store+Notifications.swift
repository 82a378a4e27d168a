// MARK: - The notification center

extension StoreSession {
    /// Subscribes an observer (deduplicated per (name, object)).
    public func subscribe(observerID: String, name: String?, object: String?) throws(CoreError) -> (
        subscription: SubscriptionSnapshot, deduplicated: Bool, revision: Int?
    ) {
        expected(
            try issue(
                .subscribe(observer: observerID, name: name, object: object, subscriptionID: RandomID.make("sub_")))
        ) {
            if case .subscribed(let subscription, let deduplicated, let revision) = $0 {
                (subscription, deduplicated, revision)
            } else {
                nil
            }
        }
    }

    /// Removes subscriptions by id, or by name and object (removeObserver:name:object:).
    public func unsubscribe(
        observerID: String, subscriptionID: String? = nil, name: String? = nil, object: String? = nil
    ) throws(CoreError) -> Int? {
        let outcome = try issue(
            .unsubscribe(observer: observerID, subscription: subscriptionID, name: name, object: object))
        return if case .removed(let revision) = outcome { revision } else { nil }
    }

    /// Posts now, or queues (with coalescing on `coalesce`: "name", "object").
    public func post(
        name: String, object: String?, userInfo: JSON?, style: PostingStyle = .now, coalesce: [String] = []
    ) throws(CoreError) -> PostOutcome {
        expected(
            try issue(
                .post(name: name, object: object, userInfo: userInfo, posting: style.rawValue, coalesce: coalesce))
        ) {
            if case .posted(let outcome) = $0 { outcome } else { nil }
        }
    }

}

extension Store {
    /// When the oldest queued posting of a style was queued.
    public func oldestQueued(_ style: PostingStyle) -> Timestamp? {
        state.withLock { state in
            switch style {
            case .now: nil
            case .asap: state.center.queue.oldest(.asap)
            case .idle: state.center.queue.oldest(.idle)
            }
        }
    }

    /// Delivers the queued postings of a style; returns how many.
    @discardableResult
    public func flushQueued(_ style: PostingStyle) -> Int {
        guard style != .now,
            case .delivered(let count)? = try? self.as(.server).issue(.deliverQueued(posting: style.rawValue))
        else {
            return 0
        }
        return count
    }

    /// The subscription count, for `/v1/stats`.
    public var subscriptionCount: Int { state.withLock { $0.center.count } }
}
