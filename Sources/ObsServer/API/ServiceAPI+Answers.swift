import ObservationCore

extension ServiceAPI {
    /// Issues a client's command now, named by the request's `Obs-Client`, and answers with its
    /// outcome (`finish` adjusts a successful answer). On a cluster node the command goes to
    /// the cluster's log first, and the answer is the outcome of applying it when it comes back
    /// (a deferred answer).
    func execute(
        _ request: HTTPRequest, _ action: Command.Action, finish: (@Sendable (inout HTTPResponse) -> Void)? = nil
    ) throws -> HTTPResponse {
        let command = Command(time: .now(), action, by: try Self.client(of: request))
        let answer: @Sendable (Outcome) -> HTTPResponse = { outcome in
            var response = HTTPResponse.answer(outcome)
            finish?(&response)
            return response
        }
        guard let cluster else { return answer(try store.execute(command)) }
        let deferred = DeferredAnswer()
        cluster.submit(command) { result in
            deferred.resolve {
                switch result {
                case .success(let outcome): answer(outcome)
                case .failure(let error): APIError(error).response
                }
            }
        }
        return .deferred(deferred)
    }

    /// The writer's name from `Obs-Client` (section 7.3): 1–128 characters of the id alphabet.
    static func client(of request: HTTPRequest) throws(CoreError) -> String? {
        guard let name = request.headers.client else { return nil }
        guard Names.isValidID(name) else {
            throw CoreError(
                .invalidRequest, "Obs-Client is 1–128 of A–Z a–z 0–9 . _ ~ -",
                details: ["header": "Obs-Client"])
        }
        return name
    }
}

extension HTTPResponse {
    /// The answer a client gets for a command's outcome: the one rendering of every outcome,
    /// shared by the routes and by the determinism digest (`obs-server replay`).
    static func answer(_ outcome: Outcome) -> HTTPResponse {
        switch outcome {
        case .revision(let revision):
            return .revision(revision)
        case .removed, .done:
            return .noContent
        case .classDefined(let snapshot, let created):
            return .json(.object(snapshot.json), status: created ? 201 : 200)
        case .objectCreated(let snapshot):
            var response = HTTPResponse.json(.object(snapshot.json), status: 201)
            response.headers.append(("Location", "/v1/objects/\(snapshot.id)"))
            return response
        case .objectDeleted(.deleted):
            return .noContent
        case .objectDeleted(.releasePending(let retainedBy, _)):
            return .json(["state": "releasePending", "retainedBy": .array(retainedBy.map(JSON.string))], status: 202)
        case .observerCreated(let observer):
            var response = HTTPResponse.json(.object(observer.summaryJSON), status: 201)
            response.headers.append(("Location", "/v1/observers/\(observer.id)"))
            return response
        case .barrier(let revision):
            var response = HTTPResponse.json(["revision": .int(revision)])
            response.reportsDurableChange = false  // a barrier changes nothing: nothing to wait for
            return response
        case .leaseRenewed(let expiresAt):
            var response = HTTPResponse.json(["expiresAt": expiresAt.map { .string($0.rfc3339) } ?? .null])
            response.reportsDurableChange = false  // leases are not stored: nothing to wait for
            return response
        case .observed(let result):
            let all = result.registrations.allSatisfy(\.deduplicated)
            var members: JSONObject = [
                "observations": .array(
                    result.registrations.map { registration, deduplicated in
                        var members = registration.json
                        if deduplicated { members["deduplicated"] = true }
                        return .object(members)
                    })
            ]
            if all { members["deduplicated"] = true }
            if let revision = result.revision { members["revision"] = .int(revision) }
            return .json(.object(members), status: all ? 200 : 201)
        case .subscribed(let subscription, let deduplicated, let revision):
            var members = subscription.json
            if deduplicated { members["deduplicated"] = true }
            if let revision { members["revision"] = .int(revision) }
            return .json(.object(members), status: deduplicated ? 200 : 201)
        case .posted(.delivered(let revision, let count)):
            return .json(["revision": .int(revision), "delivered": .int(count)])
        case .posted(.queued(let coalesced)):
            return .json(["queued": true, "coalesced": .int(coalesced)])
        case .expired(let observers):
            return .json(["expired": .array(observers.map(JSON.string))])
        case .delivered(let count):
            return .json(["delivered": .int(count)])
        case .streamOpened:
            return .noContent  // the stream route answers with the stream itself
        }
    }
}
