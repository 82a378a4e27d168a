// MARK: - Queries (section 12)

extension StoreSession {
    /// Registers a query for an observer (deduplicated per definition and options).
    public func registerQuery(
        observerID: String, definition: JSON, options: [String] = [], context: JSON? = nil, throttle: Int = 0
    ) throws(CoreError) -> QueryResult {
        expected(
            try issue(
                .query(
                    observer: observerID, definition: definition, options: options, context: context,
                    throttle: throttle, queryID: RandomID.make("qry_")))
        ) {
            if case .queried(let result) = $0 { result } else { nil }
        }
    }

    /// Removes a query; returns the revision.
    public func unregisterQuery(observerID: String, queryID: String) throws(CoreError) -> Int {
        expected(try issue(.unquery(observer: observerID, query: queryID))) {
            if case .removed(let revision?) = $0 { revision } else { nil }
        }
    }

    /// An observer's queries, in creation order.
    public func queries(of observerID: String) throws(CoreError) -> [QuerySnapshot] {
        try read { state, reader throws(CoreError) in
            try check(state.observerQuestion(observerID), reader)
            _ = try state.observers.existing(observerID)
            return state.queries.owned(by: observerID).map { state.querySnapshot($0) }
        }
    }

    /// One query, with its window's ids and its total.
    public func query(_ queryID: String, of observerID: String) throws(CoreError) -> QuerySnapshot {
        try read { state, reader throws(CoreError) in
            try check(state.observerQuestion(observerID), reader)
            _ = try state.observers.existing(observerID)
            guard let query = state.queries.existing(queryID, of: observerID) else {
                throw CoreError.notFound("query", queryID)
            }
            return state.querySnapshot(query, withWindow: true)
        }
    }

    /// `POST /v1/query`: the objects a definition selects now, of those the caller may read,
    /// without registering anything.
    public func answerQuery(_ definition: JSON) throws(CoreError) -> QueryAnswer {
        try read { state, reader throws(CoreError) in try state.answerQuery(definition, filter: reader.filter) }
    }
}

extension Store {
    /// How many queries are registered (`/v1/stats`, `/metrics`).
    public var queryCount: Int { state.withLock { $0.queries.count } }
}
