// MARK: - Deliveries to a URL (section 16): the target and the acknowledged cursor

extension StoreState {
    /// `deliver` checked as applied: its shape and ranges (the URL and the secret's form were
    /// checked by the server that issued the command: they depend on its flags). A JWT cannot
    /// make a delivering observer: its expiry is no command, so it could not end the deliveries.
    func deliveryTarget(_ json: JSON?, by principal: Principal) throws(CoreError) -> DeliveryTarget? {
        guard let json, json != .null else { return nil }
        if case .jwt = principal {
            throw CoreError(
                .invalidRequest, "a JWT cannot make a delivering observer (use a stored token)",
                details: ["field": "deliver"])
        }
        return try DeliveryTarget(json: json)
    }

    /// The receiver acknowledged the events up to `through`: the cursor moves there (never back).
    mutating func acknowledge(_ id: String, through: Int) throws(CoreError) {
        let observer = try observers.existing(id)
        guard observer.delivery != nil else {
            throw CoreError(
                .invalidRequest, "observer \(id) does not deliver to a URL", details: ["observer": .string(id)])
        }
        guard through >= 0, through <= observer.lastEventID else {
            throw CoreError(
                .invalidRequest, "observer \(id) has no event \(through)", details: ["through": .int(through)])
        }
        guard through > observer.acknowledged else { return }
        observers.update(id) { $0.acknowledged = through }
        journal.mark(.observer, id)
        journal.mark(.lastEventID, id)  // its checkpoint keeps the unacknowledged events only
    }

    /// Ends what token `id` made that delivers: a delivering observer has no lease, and lives
    /// until it is deleted or its token ends (section 16).
    mutating func removeDeliveringObservers(madeBy id: String, reason: String) {
        for observer in observers.made(by: id) where observers[observer]?.delivery != nil {
            _ = try? removeObserver(observer, reason: reason)
        }
    }

    /// Every delivering observer, in id order.
    var deliveringObservers: [DeliveringObserver] {
        observers.delivering.sorted().compactMap { id in
            guard let record = observers[id], let target = record.delivery else { return nil }
            return DeliveringObserver(id: id, target: target, acknowledged: record.acknowledged, log: record.log)
        }
    }
}
