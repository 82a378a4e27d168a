// MARK: - Authorization: every command decided with its principal, as it is applied

extension StoreState {
    /// Decides `action` for `principal` at `time` (section 13): throws 401 for a token that
    /// ended, 403 for anything its scopes do not allow; returns what it may do (nil: all).
    ///
    /// Decided here, as the command is applied, not when the request arrived: a revocation
    /// or a scope change applied first always wins, on every replica alike. The facts are the
    /// state's, the decision `Authorization`'s; whatever is decided on an object is decided on
    /// what never changes once it exists (id, class, owner).
    func authorize(_ action: Command.Action, _ principal: Principal, at time: Timestamp) throws(CoreError) -> Access? {
        try Authorization.check(.command(background: action.isBackground), by: principal, access: nil)
        // The admin and the server may do whatever that allowed: no facts to gather.
        if case .admin = principal { return nil }
        if case .server = principal { return nil }
        let access = try self.access(of: principal, at: time)
        func ask(_ question: AccessQuestion) throws(CoreError) {
            try Authorization.check(question, by: principal, access: access)
        }
        switch action {
        case .defineClass, .deleteClass, .createToken, .changeToken, .revokeToken:
            try ask(.adminOnly("change classes and tokens"))
        case .createObject(let id, let className, _, let generatedID, let owner):
            // An owner a scoped token names is one of its own observers (section 14).
            if let owner { try ask(observerQuestion(owner)) }
            let ownerToken = owner.flatMap { observers[$0]?.access?.tokenID }
            try ask(
                .object(.create, ObjectIdentity(id: id ?? generatedID, className: className, ownerToken: ownerToken)))
        case .patch(let object, _, _), .notify(let object, _):
            try ask(objectQuestion(.write, object))
        case .setValue(let object, let keyPath, _, _), .mutate(let object, let keyPath, _, _, _, _):
            try ask(objectQuestion(.write, object))
            // A key path through references writes another object: that one is decided too.
            if keyPath.utf8.contains(UInt8(ascii: ".")), let root = graph.objects[object],
                let path = try? KeyPath(keyPath),
                let target = try? graph.writeTarget(path, from: root), target.objectID != object
            {
                try ask(objectQuestion(.write, target.objectID))
            }
        case .deleteObject(let object):
            try ask(objectQuestion(.delete, object))
        case .createObserver:
            try ask(.makeObserver)
        case .deleteObserver(let observer), .keepalive(let observer), .progress(let observer),
            .unobserve(let observer, _, _, _), .unquery(let observer, _), .unsubscribe(let observer, _, _, _):
            try ask(observerQuestion(observer))
        case .observe(let observer, let object, _, _, _, _, _):
            try ask(observerQuestion(observer))
            try ask(objectQuestion(.observe, object))
        case .query(let observer, let definition, _, _, _, _):
            try ask(observerQuestion(observer))
            var className: String?
            if case .object(let members) = definition, case .string(let name)? = members["class"] { className = name }
            try ask(.query(className: className))
        case .subscribe(let observer, let name, _, _):
            try ask(observerQuestion(observer))
            try ask(.name(.subscribe, name))
        case .post(let name, _, _, _, _):
            try ask(.name(.post, name))
        case .transaction:
            break  // each operation is decided as its single request, on the state the ones before it left
        case .expireLeases, .deliverQueued, .flushThrottled, .openStream, .closeStream, .restart, .nodeDown,
            .expireTokens, .acknowledge:
            break  // refused above: background changes are the server's
        }
        return access
    }

    /// The question for `action` on object `id` as the state knows it now.
    func objectQuestion(_ action: AccessAction, _ id: String) -> AccessQuestion {
        guard let object = graph.objects[id] else { return .missingObject(action, id: id) }
        return .object(action, graph.identity(of: object))
    }

    /// The question for using observer `id` as the state knows it now.
    func observerQuestion(_ id: String) -> AccessQuestion {
        let observer = observers[id]
        return .observer(id: id, maker: observer?.access?.tokenID, exists: observer != nil)
    }
}
