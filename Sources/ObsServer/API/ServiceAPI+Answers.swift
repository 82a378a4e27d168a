import ObservationCore

extension ServiceAPI {
    /// Issues a client's command now, named by the request's `Obs-Client` and carrying its
    /// `Idempotency-Key`, through the replica (which answers it now, once durable, or once it
    /// came back from the cluster's log); `answerMembers` adds members to a successful answer
    /// (a retry under the same key gets them back too).
    /// `caller`: who asks (section 13): the core decides the command with its principal.
    /// `transactionID`: a transaction's `id`, its idempotency key for this caller (section 15).
    func execute(
        _ request: HTTPRequest, _ caller: Caller, _ action: consuming Command.Action, answerMembers: JSONObject = [:],
        transactionID: String? = nil
    ) throws -> Reply {
        let command = Command(
            time: .now(), action, as: caller.principal, by: try Self.client(of: request, caller),
            idempotency: try Self.idempotencyClaim(
                of: request, caller: caller, answerMembers: answerMembers, transactionID: transactionID))
        // Nothing to add (nearly every command): a closure with nothing captured, so none is allocated.
        guard !answerMembers.isEmpty else { return try replica.submit(command, render: Self.answer) }
        return try replica.submit(command) { outcome in Self.answer(outcome, adding: answerMembers) }
    }

    /// The answer to a command's outcome, with nothing added.
    @Sendable private static func answer(_ outcome: Outcome) -> HTTPResponse {
        guard case .replayed = outcome else { return .answer(outcome) }
        return answer(outcome, adding: [:])
    }

    /// The answer to a command's outcome; a replayed one says so (`Idempotent-Replayed`).
    private static func answer(_ outcome: Outcome, adding answerMembers: JSONObject) -> HTTPResponse {
        guard case .replayed(let kept) = outcome else { return .answer(outcome, adding: answerMembers) }
        var response = HTTPResponse(kept)
        response.headers.append(("Idempotent-Replayed", "true"))
        return response
    }

    /// The request's `Idempotency-Key` (1–128 printable ASCII), with what makes two requests
    /// the same: the SHA-256 of who asks, method, path, query (sorted) and body. Who asks is part
    /// of it: a replay answers what the first request was answered (an observer's token, a
    /// token's secret), so another credential reusing the key gets 409, never that answer.
    /// A transaction's `id` is its key, kept apart per caller (another caller's same id is
    /// another transaction); an `Idempotency-Key` sent with it must be the same.
    static func idempotencyClaim(
        of request: HTTPRequest, caller: Caller, answerMembers: JSONObject, transactionID: String? = nil
    ) throws(CoreError) -> IdempotencyClaim? {
        let header = request.headers.idempotencyKey
        if let header, !IdempotencyClaim.isValidKey(header) {
            throw CoreError(
                .invalidRequest, "Idempotency-Key is 1–128 printable ASCII characters",
                details: ["header": "Idempotency-Key"])
        }
        if let transactionID, let header, header != transactionID {
            throw CoreError(
                .invalidRequest, "a transaction's id is its idempotency key: Idempotency-Key must be the same",
                details: ["header": "Idempotency-Key"])
        }
        guard let key = transactionID.map({ "\(caller.identity) tx \($0)" }) ?? header else { return nil }
        // Each part with its length first: no part can pass for another.
        var text: [UInt8] = []
        func append(_ part: some Collection<UInt8>) {
            text += Array("\(part.count):".utf8)
            text += part
        }
        append(caller.identity.utf8)
        append(request.method.rawValue.utf8)
        append(request.path.utf8)
        for (name, value) in request.query.sorted(by: { $0.key < $1.key }) {
            append(name.utf8)
            append(value.utf8)
        }
        append(request.body)
        return IdempotencyClaim(key: key, fingerprint: TokenHash.hex(of: text), answerMembers: answerMembers)
    }

    /// The writer's name from `Obs-Client` (section 7.3): 1–128 characters of the id alphabet.
    /// A token with a `client` names its writes with it, and another name is refused (section 13).
    static func client(of request: HTTPRequest, _ caller: Caller) throws(CoreError) -> String? {
        let named = request.headers.client
        try Authorization.check(.client(named), by: caller.principal, access: caller.access)
        if let bound = caller.access?.client { return bound }
        guard let name = named else { return nil }
        guard Names.isValidID(name) else {
            throw CoreError(
                .invalidRequest, "Obs-Client is 1–128 of A–Z a–z 0–9 . _ ~ -",
                details: ["header": "Obs-Client"])
        }
        return name
    }
}

extension HTTPResponse {
    /// `answer(outcome)` with `members` added to its JSON body (a new observer's token).
    static func answer(_ outcome: Outcome, adding members: JSONObject) -> HTTPResponse {
        var response = answer(outcome)
        for (key, value) in members { response.insertMember(key, value) }
        return response
    }

    /// A kept answer, as it was first sent.
    init(_ kept: StoredAnswer) {
        self.init(status: kept.status, contentType: kept.contentType, body: kept.body)
        headers = kept.headers.map { ($0.name, $0.value) }
    }

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
        case .token(let token, let created):
            return .json(.object(token.json), status: created ? 201 : 200)
        case .observerCreated(let observer):
            var response = HTTPResponse.json(.object(observer.summaryJSON), status: 201)
            response.headers.append(("Location", "/v1/observers/\(observer.id)"))
            return response
        case .barrier(let revision):
            return .json(["revision": .int(revision)])
        case .leaseRenewed(let expiresAt):
            return .json(["expiresAt": expiresAt.map { .string($0.rfc3339) } ?? .null])
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
        case .queried(let result):
            var members: JSONObject = ["query": .object(result.query.json)]
            if result.deduplicated { members["deduplicated"] = true }
            if let revision = result.revision { members["revision"] = .int(revision) }
            return .json(.object(members), status: result.deduplicated ? 200 : 201)
        case .subscribed(let subscription, let deduplicated, let revision):
            var members = subscription.json
            if deduplicated { members["deduplicated"] = true }
            if let revision { members["revision"] = .int(revision) }
            return .json(.object(members), status: deduplicated ? 200 : 201)
        case .transaction(let result):
            return .json { result.write(to: &$0) }
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
        case .replayed(let kept):
            return HTTPResponse(kept)
        }
    }
}

extension AnswerRenderer {
    /// The server's own rendering (`HTTPResponse.answer`): what an idempotency key keeps is
    /// exactly what its first request was answered.
    static let http = AnswerRenderer { outcome, members in
        let response = HTTPResponse.answer(outcome, adding: members)
        return StoredAnswer(
            status: response.status, contentType: response.contentType,
            headers: response.headers.map { StoredAnswer.Header(name: $0.name, value: $0.value) }, body: response.body)
    }
}
