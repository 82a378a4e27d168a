/// One change to the service's state, with every input that is not a function of the state.
///
/// Every mutating request and every background change (a lease running out, queued postings
/// going out, a stream opening or closing) is a command. Applying one (`StoreState.apply`) is
/// a pure function of the state and the command: it reads no clock (`time` is when the command
/// was issued), no random source (generated ids travel in the command) and never lets hash
/// order reach what it produces. So every replica that applies the same commands in the same
/// order computes the same revisions, the same event ids and the same event bytes.
///
/// A command is a decoded request: its fields have their JSON types, but nothing else is
/// checked yet (names, key paths, existence, limits): applying it does that, the same way on
/// every replica, and answers the contract's error when it fails.
public struct Command: Sendable, Equatable {
    /// When the command was issued (wall clock). Applying never lets time go backwards: a
    /// command issued earlier than the state's clock is applied at the state's clock.
    public let time: Timestamp
    public let action: Action
    /// The client that made it (`Obs-Client`, section 7.3): the records, notifications and
    /// admin events it causes carry it as `by`. Nil for background changes and unnamed clients.
    public let by: String?
    /// The request's `Idempotency-Key` (section 7.3).
    public let idempotency: IdempotencyClaim?
    /// Who made it (section 13): the admin, the server (background changes), a scoped token,
    /// a JWT or an observer's token. Required: no command exists without its caller.
    public let principal: Principal

    public init(
        time: Timestamp, _ action: Action, as principal: Principal, by: String? = nil,
        idempotency: IdempotencyClaim? = nil
    ) {
        self.time = time
        self.action = action
        self.by = by
        self.idempotency = idempotency
        self.principal = principal
    }

    /// Whether applying it can change the state: its action can, or it keeps an answer.
    public var changesState: Bool { action.changesState || idempotency != nil }

    public enum Action: Sendable, Equatable {
        // Classes
        case defineClass(name: String, definition: JSON)
        case deleteClass(name: String)
        // Objects and values
        /// `generatedID` is used when `id` is nil. `owner`: the observer it lives as long as (section 14).
        case createObject(
            id: String?, className: String?, values: JSONObject, generatedID: String, owner: String? = nil)
        case patch(object: String, values: JSONObject, ifRevision: Int?)
        case deleteObject(object: String)
        case setValue(object: String, keyPath: String, value: JSON, ifRevision: Int?)
        case mutate(
            object: String, keyPath: String, kind: String, indexes: [Int], values: [JSON], ifRevision: Int?)
        case notify(object: String, keyPaths: [String])
        /// Several writes as one (section 15): all or nothing, under one revision.
        indirect case transaction(Transaction)
        // Observers and registrations
        /// `tokenHash`: the SHA-256 of the token the client is given (the state never holds tokens).
        /// `client`: the client name whose own changes its `skipOwn` registrations skip (section 7.3).
        /// `onRemove`: patches `[{"object", "values"}]` applied when it is removed (section 14).
        /// `deliver`: `{"url", "secret", "maxBatch", "timeout"}`, its events pushed there (section 16).
        indirect case createObserver(
            id: String, tokenHash: String, name: String?, lease: Int, retainObserved: Bool, replay: Int,
            client: String? = nil, onRemove: JSON? = nil, deliver: JSON? = nil)
        case deleteObserver(observer: String)
        case keepalive(observer: String)
        /// A delivery barrier (section 7.2): each of the observer's streams gets one `progress`
        /// event after every event up to the current revision. Changes no state.
        case progress(observer: String)
        /// `registrationIDs`: one fresh id per key path, in order, for those that are not registered yet.
        /// `throttle`: at most one record per this many milliseconds (section 7.3; nil or 0: none).
        case observe(
            observer: String, object: String, keyPaths: [String], options: [String], context: JSON?,
            registrationIDs: [String], throttle: Int? = nil)
        case unobserve(observer: String, registration: String?, object: String?, keyPath: String?)
        /// `definition`: the query's `class`, `where`, `orderBy`, `limit`, `select` (section 12),
        /// checked when applied. `queryID`: the id it takes when it is new. Boxed (`indirect`):
        /// its fields would make every command larger, and every write copies its command.
        indirect case query(
            observer: String, definition: JSON, options: [String], context: JSON?, throttle: Int?, queryID: String)
        case unquery(observer: String, query: String)
        // Notification center
        case subscribe(observer: String, name: String?, object: String?, subscriptionID: String)
        case unsubscribe(observer: String, subscription: String?, name: String?, object: String?)
        /// `userInfo`: the HTTP layer takes an object only (section 8); the core delivers any JSON.
        case post(name: String, object: String?, userInfo: JSON?, posting: String, coalesce: [String])
        // Tokens (section 13)
        /// `secretHash`: the SHA-256 of the secret the client is given. `ttl`: seconds.
        indirect case createToken(
            id: String, secretHash: String, name: String?, scopes: JSON, ttl: Int?, client: String?)
        /// `ttl`: nil leaves the expiry, `null` removes it, seconds set it anew from now.
        indirect case changeToken(id: String, scopes: JSON?, ttl: JSON?)
        /// A stored token, or the id (`jti`) of a JWT the server never stored.
        case revokeToken(id: String)
        // Background
        /// Ends the tokens whose `ttl` ran out by the command's time (and forgets old endings).
        case expireTokens
        /// Removes the observers whose lease ran out by the command's time.
        case expireLeases
        /// Delivers the queued postings of a style (`asap`, `idle`), each under its own revision.
        case deliverQueued(posting: String)
        /// Sends the folded records of throttled registrations whose window has ended by the
        /// command's time (section 7.3).
        case flushThrottled
        /// A stream of an observer (nil: the admin stream) opened or closed; holds or releases its lease.
        /// `holder`: the cluster node (and incarnation) serving it; nil on a single server, where
        /// opening also counts the stream against `maxStreams` (a cluster node counts its own).
        case openStream(observer: String?, holder: String?)
        case closeStream(observer: String?, holder: String?)
        /// The server started on this state: leases count anew from now, no stream is open.
        case restart
        /// A cluster node (incarnation) is gone: the streams it held close, their leases restart.
        case nodeDown(holder: String)
        /// Section 16: a delivering observer's receiver acknowledged its events up to `through`.
        case acknowledge(observer: String, through: Int)
    }
}

extension Command {
    /// A fresh random id for a command to carry (`obj_`, `obs_`, `reg_`, `sub_` and 11 base-62 digits: 15 bytes, an inline string).
    public static func newID(_ prefix: String) -> String { RandomID.make(prefix) }

    /// A fresh observer token: 24 random bytes in hex (the command carries its `TokenHash`).
    public static func newToken() -> String { RandomID.make("", bytes: 24) }

    /// A fresh scoped token's secret: 32 random bytes in hex, prefixed so that logs and
    /// secret scanners can tell it (`obs_st_`).
    public static func newScopedSecret() -> String { "obs_st_" + RandomID.make("", bytes: 32) }
}

extension Command.Action {
    /// The action's name in the encoding and in figures (`setValue`, `expireLeases`, …).
    public var kind: String {
        switch self {
        case .defineClass: "defineClass"
        case .deleteClass: "deleteClass"
        case .createObject: "createObject"
        case .patch: "patch"
        case .deleteObject: "deleteObject"
        case .setValue: "setValue"
        case .mutate: "mutate"
        case .notify: "notify"
        case .transaction: "transaction"
        case .createObserver: "createObserver"
        case .deleteObserver: "deleteObserver"
        case .keepalive: "keepalive"
        case .progress: "progress"
        case .observe: "observe"
        case .unobserve: "unobserve"
        case .query: "query"
        case .unquery: "unquery"
        case .subscribe: "subscribe"
        case .unsubscribe: "unsubscribe"
        case .post: "post"
        case .expireLeases: "expireLeases"
        case .deliverQueued: "deliverQueued"
        case .flushThrottled: "flushThrottled"
        case .openStream: "openStream"
        case .closeStream: "closeStream"
        case .restart: "restart"
        case .nodeDown: "nodeDown"
        case .createToken: "createToken"
        case .changeToken: "changeToken"
        case .revokeToken: "revokeToken"
        case .expireTokens: "expireTokens"
        case .acknowledge: "acknowledge"
        }
    }

    /// Whether applying it can change the state (a barrier cannot: a durable server does not
    /// journal it; a cluster still logs it, so that every node's streams get it).
    public var changesState: Bool {
        if case .progress = self { false } else { true }
    }

    /// Whether applying it may change what a token can do (one made, changed, revoked, expired).
    public var changesTokens: Bool {
        switch self {
        case .createToken, .changeToken, .revokeToken, .expireTokens: true
        default: false
        }
    }

    /// Whether only the server issues it (`Principal.server`): changes that follow from time
    /// passing or from connections, never a client's request.
    public var isBackground: Bool {
        switch self {
        case .expireTokens, .expireLeases, .deliverQueued, .flushThrottled, .openStream, .closeStream, .restart,
            .nodeDown, .acknowledge:
            true
        default: false
        }
    }

    /// Whether a client's request made it (and so it needs the disk: refused while the data
    /// directory cannot take writes). Background changes and stream bookkeeping go on.
    public var isClientWrite: Bool {
        switch self {
        case .keepalive, .progress, .expireLeases, .deliverQueued, .flushThrottled, .openStream, .closeStream, .restart,
            .nodeDown, .expireTokens, .acknowledge:
            false
        default: true
        }
    }
}
