// MARK: - Authorization: every command decided with its principal, as it is applied

extension StoreState {
    /// Decides `action` for `principal` at `time` (section 13): throws 401 for a token that
    /// ended, 403 for anything its scopes do not allow; returns what it may do (nil: all).
    ///
    /// Decided here, as the command is applied, not when the request arrived: a revocation
    /// or a scope change applied first always wins, on every replica alike. Whatever is decided
    /// on an object is decided on what never changes once it exists (id, class, owner).
    func authorize(_ action: Command.Action, _ principal: Principal?, at time: Timestamp) throws(CoreError) -> Access? {
        guard let principal else { return nil }
        let access = try self.access(of: principal, at: time)
        if case .observer(let own) = principal { try Self.checkObserverToken(action, own) }
        switch action {
        case .defineClass, .deleteClass, .createToken, .changeToken, .revokeToken:
            throw Self.forbidden("only the admin token may change classes and tokens")
        case .createObject(let id, let className, _, let generatedID, let owner):
            // An owner a scoped token names is one of its own observers (section 14).
            if let owner { try checkManages(owner, principal) }
            guard let access else { return nil }
            let ownerToken = owner.flatMap { observers[$0]?.access?.tokenID }
            let identity = ObjectIdentity(id: id ?? generatedID, className: className, ownerToken: ownerToken)
            guard access.allows(.create, identity) else {
                throw Self.forbidden(
                    "this token may not create object '\(identity.id)' of class \(className ?? "none")")
            }
        case .patch(let object, _, _), .notify(let object, _):
            try check(.write, on: object, for: access)
        case .setValue(let object, let keyPath, _, _), .mutate(let object, let keyPath, _, _, _, _):
            try check(.write, on: object, for: access)
            // A key path through references writes another object: that one is decided too.
            if access != nil, keyPath.utf8.contains(UInt8(ascii: ".")), let root = graph.objects[object],
                let path = try? KeyPath(keyPath),
                let target = try? graph.writeTarget(path, from: root), target.objectID != object
            {
                try check(.write, on: target.objectID, for: access)
            }
        case .deleteObject(let object):
            try check(.delete, on: object, for: access)
        case .createObserver:
            if let access, !access.grant.actions.contains(.observe), !access.grant.actions.contains(.subscribe) {
                throw Self.forbidden("a token makes observers only when it may observe or subscribe")
            }
        case .deleteObserver(let observer), .keepalive(let observer), .progress(let observer),
            .unobserve(let observer, _, _, _), .unquery(let observer, _), .unsubscribe(let observer, _, _, _):
            try checkManages(observer, principal)
        case .observe(let observer, let object, _, _, _, _, _):
            try checkManages(observer, principal)
            try check(.observe, on: object, for: access)
        case .query(let observer, let definition, _, _, _, _):
            try checkManages(observer, principal)
            if let access { try Self.checkQuery(definition, access) }
        case .subscribe(let observer, let name, _, _):
            try checkManages(observer, principal)
            if let access, !access.allows(.subscribe, name: name) {
                throw Self.forbidden("this token may not subscribe to \(name.map { "'\($0)'" } ?? "every name")")
            }
        case .post(let name, _, _, _, _):
            if let access, !access.allows(.post, name: name) {
                throw Self.forbidden("this token may not post '\(name)'")
            }
        case .openStream(let observer, _):
            guard let observer else { throw Self.forbidden("the admin stream is the admin token's") }
            try checkManages(observer, principal)
        case .expireLeases, .deliverQueued, .flushThrottled, .closeStream, .restart, .nodeDown, .expireTokens:
            throw Self.forbidden("background changes are the server's own")
        }
        return access
    }

    /// An observer's own token (section 9) manages its observer and nothing else.
    private static func checkObserverToken(_ action: Command.Action, _ own: String) throws(CoreError) {
        switch action {
        case .deleteObserver, .keepalive, .progress, .observe, .unobserve, .query, .unquery, .subscribe,
            .unsubscribe, .openStream:
            return
        default: throw forbidden("an observer's token manages its own observer only")
        }
    }

    /// A query needs `observe` on its class (or on any class, for a query without one).
    private static func checkQuery(_ definition: JSON, _ access: Access) throws(CoreError) {
        var className: String?
        if case .object(let members) = definition, case .string(let name)? = members["class"] { className = name }
        let allowed = access.grant.scopes.contains { scope in
            scope.allow.contains(.observe) && (scope.className == nil || scope.className == className)
        }
        guard allowed else {
            throw forbidden("this token may not observe \(className.map { "class \($0)" } ?? "objects")")
        }
    }
}
