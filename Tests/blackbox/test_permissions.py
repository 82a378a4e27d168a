"""Section 13 (scoped access), black-box: the permission matrix of issue 36, and its leak tests.

The matrix: every route of the API (all of the server's own /openapi.json, which a test below
holds the matrix to, plus the token routes) × each action on it × the targets that decide it
(matching object, non-matching class, non-matching id, missing id inside / outside the pattern,
a key path through a reference to a readable / unreadable object; matching / non-matching
notification name; the caller's own observer, the admin's, another token's, an unknown one) ×
every kind of credential (admin, observer tokens, a scoped token, the same scopes as a JWT, an
`owned`-only token, a token with no object scope, expired and revoked tokens and JWTs, observer
tokens of ended makers, no token). Each cell asserts its status, computed from the rules of the
contract (section 13) by `expected` below, never written per cell; every refused cell (4xx), and
every read, asserts that nothing changed: the admin's `GET /v1/stats` revision and the admin
stream's lastEventId are the same before and after.

`owned` (objects owned by an observer a token made, section 14): the targets `owned` and `not owned`
are Doc objects (ids outside every `ids` pattern) owned by an observer the credential's token made,
or one another token made. The `owned` credential's only object scope is `{"owned": true}`: it may
do everything to the first and nothing to the second, nor to any object without an owner.

Then the leak tests of the issue: references to unreadable objects read as null in change
records; query windows and totals never show unreadable objects; `/v1/events` is the admin's;
streams opened with a token end within 1 s of its revocation or expiry (and a JWT's at its exp);
and a JWT signed with HS256 under the configured RSA public key (algorithm confusion) is refused.
"""

import base64
import hashlib
import hmac
import http.client
import itertools
import json
import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

import pytest

from conftest import ServerProcess

JWT_SECRET = "matrix36-hs256-secret-at-least-32-bytes-long"
OBJECT_ACTIONS = ["read", "observe", "write", "create", "delete"]
SCOPES = [
    {"allow": OBJECT_ACTIONS, "class": "Doc", "ids": "room1-*"},
    {"allow": ["post", "subscribe"], "names": "chat.room1.*"},
]
# Objects whose owner is an observer the token made (section 14).
OWNED_SCOPES = [{"allow": OBJECT_ACTIONS, "owned": True}]
# No object scope, no observe/subscribe: classes are not its to read, observers not its to make.
POST_ONLY_SCOPES = [{"allow": ["post"], "names": "chat.*"}]
CLASS_DEFINITION = {"properties": {"title": {"type": "string"}, "ref": {"type": "ref"}, "tags": {"type": "array"}}}
LEASE = 600  # no observer's lease runs out while the module runs (a background change would be counted)


# ---------------------------------------------------------------------------------------------
# The rules: what a set of scopes allows (section 13), as the contract states them
# ---------------------------------------------------------------------------------------------


def glob(pattern, text):
    """`*` matches any run of characters; everything else itself."""
    return re.fullmatch(".*".join(map(re.escape, pattern.split("*"))), text) is not None


class Grant:
    """A token's scopes, which add up."""

    def __init__(self, scopes):
        self.scopes = scopes
        self.actions = {action for scope in scopes for action in scope["allow"]}

    def allows(self, action, object_id, class_name, mine=False):
        """`action` on an existing object; `mine`: its owner is an observer this token made."""
        return any(
            action in scope["allow"] and (mine or not scope.get("owned"))
            and ("class" in scope or "ids" in scope or scope.get("owned"))
            and scope.get("class", class_name) == class_name
            and glob(scope.get("ids", "*"), object_id)
            for scope in self.scopes)

    def might_allow(self, action, object_id):
        """Whether a missing object `object_id` could be allowed `action` (its class unknown):
        some scope allowing it has no `ids`, or `ids` matching. Else refusing it tells nothing."""
        return any(
            action in scope["allow"] and ("class" in scope or "ids" in scope or scope.get("owned"))
            and glob(scope.get("ids", "*"), object_id)
            for scope in self.scopes)

    def allows_name(self, action, name):
        """`post` / `subscribe` on a notification name (None: every name, a wildcard subscription)."""
        return any(
            action in scope["allow"]
            and ("names" not in scope if name is None else glob(scope.get("names", "*"), name))
            for scope in self.scopes)

    def may_query(self, class_name):
        """A query needs `observe` on its class (a scope of any class for a query without one)."""
        return any("observe" in scope["allow"] and scope.get("class", class_name) == class_name
                   for scope in self.scopes)

    def may_make_observers(self):
        return bool({"observe", "subscribe"} & self.actions)


@dataclass(frozen=True)
class Credential:
    name: str
    kind: str  # admin, observer, scoped, ended, none
    grant: Grant | None = None  # scoped: its own; observer: its maker's (None: the admin made it)
    maker: str | None = None  # observer: the credential that makes its observers
    reason: str | None = None  # ended: details.reason of its 401
    other_maker: str = "scoped"  # who makes the "other token's" observer target

    def reader(self):
        """What its reads may show (None: everything)."""
        return self.grant if self.kind in ("scoped", "observer") else None


SCOPED_GRANT = Grant(SCOPES)
CREDENTIALS = {c.name: c for c in [
    Credential("admin", "admin"),
    Credential("observer(admin)", "observer", None, maker="admin", other_maker="admin"),
    Credential("observer(scoped)", "observer", SCOPED_GRANT, maker="scoped", other_maker="scoped"),
    Credential("scoped", "scoped", SCOPED_GRANT, other_maker="jwt"),
    Credential("jwt", "scoped", SCOPED_GRANT),
    Credential("owned", "scoped", Grant(OWNED_SCOPES)),
    Credential("post-only", "scoped", Grant(POST_ONLY_SCOPES)),
    Credential("expired", "ended", reason="expired"),
    Credential("expired-jwt", "ended", reason="expired"),
    Credential("revoked", "ended", reason="revoked"),
    Credential("revoked-jwt", "ended", reason="revoked"),
    Credential("observer(revoked)", "ended", reason="revoked"),
    Credential("observer(expired-jwt)", "ended", reason="expired"),
    Credential("none", "none"),
]}

# Object targets: (id prefix, class, exists). Fresh objects per cell (`World.object_target`).
OBJECTS = {
    "match": ("room1-", "Doc", True),
    "other class": ("room1-", "Other", True),
    "other id": ("room2-", "Doc", True),
    "missing in": ("room1-", None, False),
    "missing out": ("room9-", None, False),
    # a room1 Doc whose `ref` points at a readable room1 Doc / an unreadable room2 Doc
    "ref in": ("room1-", "Doc", True),
    "ref out": ("room1-", "Doc", True),
    # Doc objects owned by an observer the credential's token made / another token made (section 14)
    "owned": ("own-", "Doc", True),
    "not owned": ("own-", "Doc", True),
}
# What POST /v1/objects asks for: (id prefix or None for a generated id, class, id taken already).
CREATES = {
    "match": ("room1-", "Doc", False),
    "other class": ("room1-", "Other", False),
    "other id": ("room2-", "Doc", False),
    "generated id": (None, "Doc", False),
    "taken, match": ("room1-", "Doc", True),
    "taken, other id": ("room2-", "Doc", True),
}
UNSET = object()


@dataclass(frozen=True)
class Cell:
    """One request shape: `route` is the OpenAPI path it exercises, `path` the concrete path
    (formatted with the values `World.prepare` resolves), `area` how routes are granted."""
    method: str
    route: str
    target: str
    area: str
    path: str
    ok: int = 200
    action: str | None = None
    obj: str | None = None  # key of OBJECTS (or CREATES for area "create")
    observer: str | None = None  # own, admin's, other token's, unknown
    sub: str | None = None  # a registration the admin makes first: reg, query, sub
    name: object = UNSET  # notification name decided
    qclass: object = UNSET  # query class decided
    body: object = None  # JSON, or a function of the resolved values
    headers: dict = field(default_factory=dict, hash=False)
    fresh: str | None = None  # class, token (made by the admin first), self-token
    read: bool = False  # a read: must change nothing even when it succeeds
    token_in_query: bool = False  # `?access_token=` instead of the Authorization header

    @property
    def id(self):
        return f"{self.method} {self.route} [{self.target}]"

    @property
    def stream(self):
        """An event stream (SSE, NDJSON, poll), or the beacon's removal (section 14): the only routes
        that take `?access_token=`."""
        return self.route.endswith("/events") or self.route.endswith("/remove")


def admin_status(cell):
    """What the admin gets: success, 404 for a missing object, 409 for a taken id."""
    if cell.area == "create":
        return 409 if CREATES[cell.obj][2] else cell.ok
    if (cell.obj and not OBJECTS[cell.obj][2]) or cell.observer == "unknown":
        return 404
    return cell.ok


def expected(credential, cell):
    """The status the contract gives `credential` on `cell`."""
    if cell.area == "open":
        return cell.ok
    if credential.kind in ("ended", "none") or (cell.token_in_query and not cell.stream):
        return 401
    if credential.kind == "admin":
        return admin_status(cell)
    grant = credential.grant
    # 1. may this caller use the route at all? (sections 9 and 13)
    if cell.area == "admin":  # stats, metrics, the admin stream, class changes, tokens
        return 403
    if credential.kind == "observer":  # its own observer; reading objects and classes, POST /v1/query
        if cell.area == "observer":
            if cell.observer != "own":
                return 403
        elif not ((cell.area in ("classes", "object", "objects") and cell.method == "GET") or cell.area == "query"):
            return 403
    else:  # a scoped token or JWT: objects, queries, notifications, its own observers
        if cell.area == "classes" and "read" not in grant.actions:
            return 403
        if cell.area == "observers" and cell.method == "POST" and not grant.may_make_observers():
            return 403
        if cell.area == "observer" and cell.observer == "unknown":
            return 404
        if cell.area == "observer" and cell.observer != "own":
            return 403
    if grant is None:  # an observer token the admin made: the admin's reads on its own observer
        return admin_status(cell)
    # 2. what the core decides per object, class or name
    if cell.area == "create":
        prefix, class_name, taken = CREATES[cell.obj]
        if not grant.allows("create", (prefix or "obj_") + "x", class_name):
            return 403
        return 409 if taken else cell.ok
    if cell.obj:
        prefix, class_name, exists = OBJECTS[cell.obj]
        if not exists:  # 404 only where the action could be allowed: else a 404 would tell what exists
            return 404 if grant.might_allow(cell.action, prefix + "x") else 403
        if not grant.allows(cell.action, prefix + "x", class_name, mine=cell.obj == "owned"):
            return 403
        if cell.obj == "ref out" and cell.action == "write" and not grant.allows("write", "room2-x", "Doc"):
            return 403  # a write through a reference writes the referenced object: decided too
        return cell.ok
    if cell.name is not UNSET:
        return cell.ok if grant.allows_name(cell.action, cell.name) else 403
    if cell.qclass is not UNSET:
        return cell.ok if grant.may_query(cell.qclass) else 403
    return cell.ok


# ---------------------------------------------------------------------------------------------
# The cells
# ---------------------------------------------------------------------------------------------


def build_cells():
    cells = []

    def add(*args, **kwargs):
        cells.append(Cell(*args, **kwargs))

    add("GET", "/healthz", "-", "open", "/healthz", read=True)
    add("GET", "/openapi.json", "-", "open", "/openapi.json", read=True)
    add("GET", "/v1/stats", "-", "admin", "/v1/stats", read=True)
    add("GET", "/metrics", "-", "admin", "/metrics", read=True)
    for suffix, in_query in [("", False), (", access_token", True)]:
        add("GET", "/v1/events", "poll" + suffix, "admin", "/v1/events?after={admin_last}&wait=0",
            headers={"Accept": "application/json"}, read=True, token_in_query=in_query)

    # classes
    add("GET", "/v1/classes", "-", "classes", "/v1/classes", read=True)
    add("GET", "/v1/classes/{name}", "Doc", "classes", "/v1/classes/Doc", read=True)
    add("GET", "/v1/classes/{name}", "missing", "classes", "/v1/classes/Missing36", read=True,
        ok=404)
    add("PUT", "/v1/classes/{name}", "new", "admin", "/v1/classes/{cls}", ok=201, body=CLASS_DEFINITION)
    add("PUT", "/v1/classes/{name}", "Doc", "admin", "/v1/classes/Doc", body=CLASS_DEFINITION)
    add("DELETE", "/v1/classes/{name}", "unused", "admin", "/v1/classes/{cls}", ok=204, fresh="class")

    # objects
    for target in CREATES:
        def create_body(v, target=target):
            body = {"class": CREATES[target][1], "values": {"title": "created"}}
            if CREATES[target][0]:
                body["id"] = v["object"]
            return body
        add("POST", "/v1/objects", target, "create", "/v1/objects", ok=201, action="create", obj=target,
            body=create_body)
    for target, query in [("all", ""), ("class Doc", "?class=Doc"), ("class Other", "?class=Other")]:
        add("GET", "/v1/objects", target, "objects", "/v1/objects" + query, read=True)
    simple = [t for t in OBJECTS if not t.startswith("ref")]
    for target in OBJECTS:
        add("GET", "/v1/objects/{id}", target, "object", "/v1/objects/{object}", action="read", obj=target,
            read=True)
    # `?access_token=` is for event streams only: elsewhere it is no credential at all
    add("GET", "/v1/objects/{id}", "match, access_token", "object", "/v1/objects/{object}", action="read",
        obj="match", read=True, token_in_query=True)
    for target in simple:
        add("PATCH", "/v1/objects/{id}", target, "object", "/v1/objects/{object}", action="write", obj=target,
            body={"values": {"title": "patched"}})
        add("DELETE", "/v1/objects/{id}", target, "object", "/v1/objects/{object}", ok=204, action="delete",
            obj=target)
        add("POST", "/v1/objects/{id}/notify", target, "object", "/v1/objects/{object}/notify", action="write",
            obj=target, body={"keyPaths": ["title"]})
    for target in OBJECTS:
        key_path = "ref.title" if target.startswith("ref") else "title"
        add("GET", "/v1/objects/{id}/values/{keyPath}", target, "object",
            "/v1/objects/{object}/values/" + key_path, action="read", obj=target, read=True)
        add("PUT", "/v1/objects/{id}/values/{keyPath}", target, "object",
            "/v1/objects/{object}/values/" + key_path, action="write", obj=target, body={"value": "put"})
        add("POST", "/v1/objects/{id}/values/{keyPath}/mutations", target, "object",
            "/v1/objects/{object}/values/" + ("ref.tags" if target.startswith("ref") else "tags") + "/mutations",
            action="write", obj=target, body={"kind": "insertion", "indexes": [0], "values": ["tag"]})

    # observers
    add("POST", "/v1/observers", "-", "observers", "/v1/observers", ok=201, body={"lease": LEASE})
    add("GET", "/v1/observers", "-", "observers", "/v1/observers", read=True)
    observers = ["own", "admin's", "other token's", "unknown"]
    for target in observers:
        base = "/v1/observers/{observer}"
        add("GET", "/v1/observers/{id}", target, "observer", base, observer=target, read=True)
        add("DELETE", "/v1/observers/{id}", target, "observer", base, ok=204, observer=target)
        for suffix, in_query in [("", False), (", access_token", True)]:  # navigator.sendBeacon's route
            add("POST", "/v1/observers/{id}/remove", target + suffix, "observer", base + "/remove", ok=204,
                observer=target, token_in_query=in_query)
        add("POST", "/v1/observers/{id}/keepalive", target, "observer", base + "/keepalive", observer=target)
        add("POST", "/v1/observers/{id}/progress", target, "observer", base + "/progress", observer=target)
        for suffix, in_query in [("", False), (", access_token", True)]:
            add("GET", "/v1/observers/{id}/events", target + ", poll" + suffix, "observer", base + "/events?wait=0",
                observer=target, headers={"Accept": "application/json"}, read=True, token_in_query=in_query)
        add("GET", "/v1/observers/{id}/observations", target, "observer", base + "/observations",
            observer=target, read=True)
        add("DELETE", "/v1/observers/{id}/observations", target, "observer",
            base + "/observations?object=room1-a&keyPath=title", ok=204, observer=target, sub="reg")
        add("DELETE", "/v1/observers/{id}/observations/{registration}", target, "observer",
            base + "/observations/{sub}", ok=204, observer=target, sub="reg")
        add("GET", "/v1/observers/{id}/queries", target, "observer", base + "/queries", observer=target,
            read=True)
        add("GET", "/v1/observers/{id}/queries/{query}", target, "observer", base + "/queries/{sub}",
            observer=target, sub="query", read=True)
        add("DELETE", "/v1/observers/{id}/queries/{query}", target, "observer", base + "/queries/{sub}",
            ok=204, observer=target, sub="query")
        add("GET", "/v1/observers/{id}/subscriptions", target, "observer", base + "/subscriptions",
            observer=target, read=True)
        add("DELETE", "/v1/observers/{id}/subscriptions", target, "observer",
            base + "/subscriptions?name=chat.room1.setup", ok=204, observer=target, sub="sub")
        add("DELETE", "/v1/observers/{id}/subscriptions/{subscription}", target, "observer",
            base + "/subscriptions/{sub}", ok=204, observer=target, sub="sub")
        # registrations: on its own observer every object / class / name target; elsewhere one
        for obj in (simple if target == "own" else ["match"]):
            add("POST", "/v1/observers/{id}/observations", f"{target}, object {obj}", "observer",
                base + "/observations", ok=201, observer=target, action="observe", obj=obj,
                body=lambda v: {"object": v["object"], "keyPath": "title"})
        for class_name in (["Doc", "Other", None] if target == "own" else ["Doc"]):
            add("POST", "/v1/observers/{id}/queries", f"{target}, class {class_name or 'any'}", "observer",
                base + "/queries", ok=201, observer=target, qclass=class_name,
                body={"class": class_name} if class_name else {})
        for name in (["chat.room1.hello", "chat.room2.hello", None] if target == "own" else ["chat.room1.hello"]):
            add("POST", "/v1/observers/{id}/subscriptions", f"{target}, name {name or 'any'}", "observer",
                base + "/subscriptions", ok=201, observer=target, action="subscribe", name=name,
                body={"name": name} if name else {})

    # one-shot queries and notifications
    for class_name in ["Doc", "Other", None]:
        add("POST", "/v1/query", f"class {class_name or 'any'}", "query", "/v1/query", read=True,
            body={"class": class_name, "limit": 10000} if class_name else {"limit": 10000})
    for name in ["chat.room1.hello", "chat.room2.hello"]:
        add("POST", "/v1/notifications", name, "notify", "/v1/notifications", action="post", name=name,
            body={"name": name})

    # transactions (section 15): each operation authorized as its single request, so a one-operation
    # transaction is decided as that request is (answering 200 where the request answers 201 or 204)
    def transaction(operation):
        return lambda v: {"operations": [{key: value.format(**v) if isinstance(value, str) else value
                                          for key, value in operation.items()}]}
    for target in OBJECTS:
        key_path = "ref.title" if target.startswith("ref") else "title"
        add("POST", "/v1/transactions", f"set, {target}", "object", "/v1/transactions", action="write", obj=target,
            body=transaction({"op": "set", "object": "{object}", "keyPath": key_path, "value": "tx"}))
    for target in simple:
        add("POST", "/v1/transactions", f"delete, {target}", "object", "/v1/transactions", action="delete",
            obj=target, body=transaction({"op": "delete", "object": "{object}"}))
    for target in CREATES:
        def create_operation(v, target=target):
            operation = {"op": "create", "class": CREATES[target][1], "values": {"title": "created"}}
            if CREATES[target][0]:
                operation["id"] = v["object"]
            return {"operations": [operation]}
        add("POST", "/v1/transactions", f"create, {target}", "create", "/v1/transactions", action="create",
            obj=target, body=create_operation)
    for name in ["chat.room1.hello", "chat.room2.hello"]:
        add("POST", "/v1/transactions", f"post, {name}", "notify", "/v1/transactions", action="post", name=name,
            body={"operations": [{"op": "post", "name": name}]})

    # tokens: the admin's alone
    add("POST", "/v1/tokens", "-", "admin", "/v1/tokens", ok=201, body={"scopes": SCOPES, "ttl": 600})
    add("GET", "/v1/tokens", "-", "admin", "/v1/tokens", read=True)
    for target, fresh in [("another", "token"), ("its own", "self-token"), ("unknown", None)]:
        token_path = "/v1/tokens/" + ("{token}" if fresh else "tok_00000000000000ff")
        add("GET", "/v1/tokens/{id}", target, "admin", token_path, ok=200 if fresh else 404, fresh=fresh, read=True)
        add("PATCH", "/v1/tokens/{id}", target, "admin", token_path, ok=200 if fresh else 404, fresh=fresh,
            body={"ttl": 600})
        # an id never stored is recorded as a revoked JWT id: 204 for the admin too
        add("DELETE", "/v1/tokens/{id}", target, "admin", token_path, ok=204, fresh=fresh)
    return cells


CELLS = build_cells()


def applicable(credential, cell):
    """A token that may not make observers has no observer of its own to aim at."""
    return not (cell.observer == "own" and credential.kind == "scoped" and not credential.grant.may_make_observers())


MATRIX = [(credential, cell) for credential in CREDENTIALS.values() for cell in CELLS if applicable(credential, cell)]


# ---------------------------------------------------------------------------------------------
# The server and its fixture data
# ---------------------------------------------------------------------------------------------


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint_jwt(claims, key=JWT_SECRET.encode(), alg="HS256"):
    """An HS256 JWT (or any header `alg`, signed with HMAC-SHA256 under `key`)."""
    head = b64url(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    body = b64url(json.dumps(claims).encode())
    signature = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(signature)}"


class Client:
    """One keep-alive connection to the server; `call` returns (status, JSON or text)."""

    def __init__(self, server):
        self.server = server
        self.connection = None

    def call(self, method, path, body=None, token="admin", headers=None):
        headers = dict(headers or {})
        if token:
            headers["Authorization"] = f"Bearer {token}"
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        for attempt in range(2):
            if self.connection is None:
                self.connection = self.server.connection(timeout=10)
            try:
                self.connection.request(method, path, body=data, headers=headers)
                response = self.connection.getresponse()
                raw = response.read().decode()
                break
            except (OSError, http.client.HTTPException):
                self.connection.close()
                self.connection = None
                if attempt:
                    raise
        if response.getheader("Connection", "").lower() == "close":
            self.connection.close()
            self.connection = None
        try:
            return response.status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return response.status, raw

    def ok(self, method, path, body=None, token="admin", headers=None):
        status, answer = self.call(method, path, body, token, headers)
        assert 200 <= status < 300, f"setup {method} {path} {body}: {status} {answer}"
        return answer


class World:
    """The module's server, its credentials and the fixed objects; makes each cell's targets."""

    def __init__(self, server):
        self.server = server
        self.client = Client(server)
        self.counter = itertools.count(1)
        self.tokens = {"admin": "admin", "none": None}  # credential name -> bearer secret
        self.token_ids = {}  # credential name -> token id (tok_…, or a JWT's jti)
        self.fixed_own = {}  # credential name -> an observer it made (for ended credentials)
        self.owner_of = {}  # object id -> the credential that made its owner (section 14)
        self.admin_last = 0

    def call(self, *args, **kwargs):
        return self.client.call(*args, **kwargs)

    def ok(self, *args, **kwargs):
        return self.client.ok(*args, **kwargs)

    def make_token(self, scopes, **extra):
        answer = self.ok("POST", "/v1/tokens", {"scopes": scopes, **extra})
        return answer["token"], answer["id"]

    def new_observer(self, maker):
        """(id, token) of a new observer made with `maker`'s credential."""
        answer = self.ok("POST", "/v1/observers", {"lease": LEASE}, token=self.tokens[maker])
        return answer["id"], answer["token"]

    def set_up(self):
        now = int(time.time())
        # First what must end by itself: a token with ttl 1 and a JWT with exp 2 s ahead, each with
        # an observer made before it ends.
        self.tokens["expired"], self.token_ids["expired"] = self.make_token(SCOPES, ttl=1)
        self.expired_jwt_exp = now + 2
        self.tokens["expired-jwt"] = mint_jwt({"exp": self.expired_jwt_exp, "jti": "jwt-expired36",
                                               "obs": {"scopes": SCOPES}})
        self.fixed_own["expired"] = self.new_observer("expired")[0]
        self.fixed_own["expired-jwt"], self.tokens["observer(expired-jwt)"] = self.new_observer("expired-jwt")
        self.fixed_own["observer(expired-jwt)"] = self.fixed_own["expired-jwt"]

        self.ok("PUT", "/v1/classes/Doc", CLASS_DEFINITION)
        self.ok("PUT", "/v1/classes/Other", CLASS_DEFINITION)
        for object_id, class_name in [("room1-a", "Doc"), ("room1-b", "Doc"), ("room2-a", "Doc"),
                                      ("room1-o", "Other")]:
            self.create(object_id, class_name)

        self.tokens["scoped"], self.token_ids["scoped"] = self.make_token(SCOPES)
        self.token_ids["jwt"] = "jwt-matrix36"
        self.tokens["jwt"] = mint_jwt({"exp": now + 3600, "jti": "jwt-matrix36", "obs": {"scopes": SCOPES}})
        self.tokens["owned"], self.token_ids["owned"] = self.make_token(OWNED_SCOPES)
        self.tokens["post-only"], self.token_ids["post-only"] = self.make_token(POST_ONLY_SCOPES)
        self.tokens["observer(admin)"] = self.new_observer("admin")[1]
        self.tokens["observer(scoped)"] = self.new_observer("scoped")[1]
        for name in ["admin", "none", "observer(admin)", "observer(scoped)"]:
            self.fixed_own[name] = self.new_observer("admin" if name != "observer(scoped)" else "scoped")[0]

        # Revoked: a stored token and a JWT, each with an observer made before the DELETE.
        self.tokens["revoked"], self.token_ids["revoked"] = self.make_token(SCOPES)
        self.tokens["revoked-jwt"] = mint_jwt({"exp": now + 3600, "jti": "jwt-revoked36", "obs": {"scopes": SCOPES}})
        self.fixed_own["revoked"], self.tokens["observer(revoked)"] = self.new_observer("revoked")
        self.fixed_own["observer(revoked)"] = self.fixed_own["revoked"]
        self.fixed_own["revoked-jwt"] = self.new_observer("revoked-jwt")[0]
        self.ok("DELETE", f"/v1/tokens/{self.token_ids['revoked']}")
        self.ok("DELETE", "/v1/tokens/jwt-revoked36")

        # Wait (bounded) until both have ended: the ttl token's expiry is the server's own change,
        # which must be over before any cell counts revisions.
        deadline = time.monotonic() + 5
        while (self.call("GET", f"/v1/tokens/{self.token_ids['expired']}")[0] != 404
               or time.time() < self.expired_jwt_exp + 0.05):
            assert time.monotonic() < deadline, "the ttl-1 token did not expire"
            time.sleep(0.05)
        self.mark()

    def create(self, object_id, class_name, values=None):
        return self.ok("POST", "/v1/objects", {"id": object_id, "class": class_name,
                                               "values": values or {"title": object_id, "tags": []}})

    # -- each cell's targets, made by the admin before the cell's request --

    def object_target(self, target, n, credential):
        prefix, class_name, exists = OBJECTS[target]
        object_id = f"{prefix}c{n}"
        if target in ("owned", "not owned"):
            if credential.kind in ("ended", "none") or not (credential.grant or Grant([])).may_make_observers():
                maker = "admin"  # a credential that makes no observers: any owner is another's
            elif target == "owned":
                maker = credential.maker or credential.name
            else:
                maker = credential.other_maker
            owner = self.new_observer(maker)[0]
            self.owner_of[object_id] = maker
            self.ok("POST", "/v1/objects", {"id": object_id, "class": class_name, "owner": owner,
                                            "values": {"title": object_id, "tags": []}})
        elif target.startswith("ref"):
            referenced = f"{'room1-' if target == 'ref in' else 'room2-'}c{n}-t"
            self.create(referenced, "Doc")
            self.create(object_id, "Doc", {"title": object_id, "ref": {"$ref": referenced}, "tags": []})
        elif exists:
            self.create(object_id, class_name)
        return object_id

    def observer_target(self, credential, target):
        """(observer id, the bearer secret to use): fresh observers, so that no cell depends on another."""
        token = self.tokens.get(credential.name)
        if target == "unknown":
            return "obs_unknown36", token
        if target == "admin's":
            return self.new_observer("admin")[0], token
        if target == "other token's":
            return self.new_observer(credential.other_maker)[0], token
        if credential.kind == "observer":  # its own: a new observer of the same maker, and its token
            return self.new_observer(credential.maker)
        if credential.kind in ("admin", "scoped"):
            return self.new_observer(credential.name)[0], token
        return self.fixed_own[credential.name], token  # an ended credential makes nothing any more

    def registration(self, observer, kind):
        if observer == "obs_unknown36":
            return {"reg": "reg_unknown36", "query": "qry_unknown36", "sub": "sub_unknown36"}[kind]
        base = f"/v1/observers/{observer}"
        if kind == "reg":
            return self.ok("POST", base + "/observations", {"object": "room1-a", "keyPath": "title"})[
                "observations"][0]["id"]
        if kind == "query":
            return self.ok("POST", base + "/queries", {"class": "Doc"})["query"]["id"]
        return self.ok("POST", base + "/subscriptions", {"name": "chat.room1.setup"})["id"]

    def prepare(self, credential, cell):
        """The cell's request: (bearer secret, path, body, resolved values)."""
        n = next(self.counter)
        token = self.tokens.get(credential.name)
        values = {"admin_last": self.admin_last}
        if cell.observer:
            values["observer"], token = self.observer_target(credential, cell.observer)
            if cell.sub:
                values["sub"] = self.registration(values["observer"], cell.sub)
        if cell.area == "create":
            prefix, class_name, taken = CREATES[cell.obj]
            if prefix:
                values["object"] = f"{prefix}c{n}"
                if taken:
                    self.create(values["object"], class_name)
        elif cell.obj:
            values["object"] = self.object_target(cell.obj, n, credential)
        if cell.fresh == "class":
            values["cls"] = f"Class{n}"
            self.ok("PUT", f"/v1/classes/Class{n}", CLASS_DEFINITION)
        elif "{cls}" in cell.path:
            values["cls"] = f"Class{n}"
        if cell.fresh == "token" or (cell.fresh == "self-token" and credential.name not in self.token_ids):
            values["token"] = self.make_token(SCOPES)[1]
        elif cell.fresh == "self-token":
            values["token"] = self.token_ids[credential.name]
        body = cell.body(values) if callable(cell.body) else cell.body
        return token, cell.path.format(**values), body, values

    # -- "nothing changed" --

    def mark(self):
        """(revision, admin stream's lastEventId) now; drains the admin stream up to now."""
        revision = self.ok("GET", "/v1/stats")["revision"]
        while True:
            answer = self.ok("GET", f"/v1/events?after={self.admin_last}&limit=1000&wait=0",
                             headers={"Accept": "application/json"})
            self.admin_last = answer["lastEventId"]
            if not answer["events"]:
                return revision, self.admin_last

    def assert_unchanged(self, before, what):
        revision, last = before
        now = self.ok("GET", "/v1/stats")["revision"]
        events = self.ok("GET", f"/v1/events?after={last}&wait=0", headers={"Accept": "application/json"})
        assert now == revision and not events["events"], (
            f"{what} changed something: revision {revision} -> {now}, admin events {events['events']}")


@pytest.fixture(scope="module")
def world():
    server = ServerProcess("--jwt-secret", JWT_SECRET, token="admin")
    server.start()
    try:
        world = World(server)
        world.set_up()
        yield world
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------
# The matrix
# ---------------------------------------------------------------------------------------------

ERROR_CODES = {401: "unauthorized", 403: "forbidden", 404: "notFound", 409: "conflict"}


def readable(grant, object_id, class_name, world=None, credential=None):
    """Whether `grant` reads the object; an owned one is the credential's when its owner's maker is."""
    mine = world is not None and world.owner_of.get(object_id) == (credential.maker or credential.name)
    return grant is None or grant.allows("read", object_id, class_name, mine=mine)


def check_answer(world, credential, cell, answer, values):
    """What a successful read shows: only what the credential may read."""
    grant = credential.reader()
    if cell.route == "/v1/objects" and cell.method == "GET":
        for item in answer["objects"]:
            assert readable(grant, item["id"], item["class"], world, credential), (
                f"{credential.name} was shown {item['id']}")
    elif cell.route == "/v1/query":
        everything = world.ok("POST", "/v1/query", cell.body)
        classes = [cell.body["class"]] if "class" in cell.body else ["Doc", "Other"]
        allowed = set()
        for class_name in classes:
            ids = [o["id"] for o in world.ok("POST", "/v1/query", {"class": class_name, "limit": 10000})["objects"]]
            allowed |= {i for i in ids if readable(grant, i, class_name, world, credential)}
        shown = [o["id"] for o in answer["objects"]]
        assert set(shown) == allowed and answer["total"] == len(allowed) <= everything["total"], (
            f"{credential.name}'s query answer {shown[:20]}… total {answer['total']}, readable {len(allowed)}")
    elif cell.route == "/v1/objects/{id}/values/{keyPath}" and cell.obj in ("ref in", "ref out"):
        hidden = cell.obj == "ref out" and not readable(grant, "room2-x", "Doc")
        referenced = values["object"] + "-t" if cell.obj == "ref in" else values["object"].replace("room1-", "room2-") + "-t"
        want = None if hidden else referenced  # the referenced object's title is its id
        assert answer["value"] == want, f"ref.title read {answer['value']!r}, expected {want!r}"
    elif cell.route == "/v1/objects/{id}" and cell.method == "GET" and cell.obj in ("ref in", "ref out"):
        hidden = cell.obj == "ref out" and not readable(grant, "room2-x", "Doc")
        assert (answer["values"]["ref"] is None) == hidden, f"ref read {answer['values']['ref']!r}"
    elif cell.route == "/v1/observers" and cell.method == "GET" and credential.kind == "scoped":
        assert all(row.get("tokenId") == world.token_ids[credential.name] for row in answer["observers"]), (
            f"{credential.name} was shown observers of others: {answer['observers']}")


@pytest.mark.parametrize("credential,cell", MATRIX, ids=[f"{c.name} | {cell.id}" for c, cell in MATRIX])
def test_cell(world, credential, cell):
    token, path, body, values = world.prepare(credential, cell)
    if cell.token_in_query:
        path, token = path + ("&" if "?" in path else "?") + f"access_token={token}" * bool(token), None
    before = world.mark()
    status, answer = world.call(cell.method, path, body, token=token, headers=cell.headers)
    want = expected(credential, cell)
    request = f"{cell.method} {path} {json.dumps(body) if body is not None else ''} as {credential.name}"
    if status >= 400 or cell.read:
        world.assert_unchanged(before, request)
    assert status == want, f"{request}: expected {want}, got {status} {answer}"
    if status in ERROR_CODES:
        assert answer["error"]["code"] == ERROR_CODES[status], f"{request}: {answer}"
    if status == 401 and credential.kind == "ended" and (cell.stream or not cell.token_in_query):
        assert answer["error"]["details"]["reason"] == credential.reason, f"{request}: {answer}"
    if 200 <= status < 300 and cell.read:
        check_answer(world, credential, cell, answer, values)


def test_matrix_covers_every_documented_route(world):
    """Every path × method of the server's /openapi.json has cells (for every credential), so a
    new route cannot be left out of the matrix."""
    status, document = world.call("GET", "/openapi.json", token=None)
    assert status == 200
    documented = {(method.upper(), path) for path, item in document["paths"].items()
                  for method in item if method in ("get", "put", "post", "patch", "delete")}
    covered = {(cell.method, cell.route) for cell in CELLS}
    assert documented - covered == set(), f"routes without cells: {sorted(documented - covered)}"
    for credential in CREDENTIALS.values():
        mine = {(cell.method, cell.route) for c, cell in MATRIX if c is credential}
        assert documented - mine == set(), f"{credential.name} lacks {sorted(documented - mine)}"


def test_openapi_documents_the_token_routes(world):
    """Section 10: /openapi.json is a document of this API; section 13's token routes belong in it."""
    document = world.call("GET", "/openapi.json", token=None)[1]
    missing = sorted({(cell.method, cell.route) for cell in CELLS if cell.route.startswith("/v1/tokens")}
                     - {(method.upper(), path) for path, item in document["paths"].items() for method in item})
    assert not missing, f"/openapi.json does not document {missing}"


# ---------------------------------------------------------------------------------------------
# Leak tests
# ---------------------------------------------------------------------------------------------


def poll(world, observer, token, after, wait=0):
    return world.ok("GET", f"/v1/observers/{observer}/events?after={after}&wait={wait}&limit=1000", token=token,
                    headers={"Accept": "application/json"})


def test_reference_to_an_unreadable_object_reads_null_in_records(world):
    """A scoped observer of `ref.title`: repointed (by the admin) to an unreadable object, the
    record says null; writes to that object send nothing; pointed back, the value again."""
    scoped = world.tokens["scoped"]
    world.create("room1-leak1-t", "Doc")
    world.create("room2-leak1", "Doc", {"title": "secret", "tags": []})
    world.create("room1-leak1", "Doc", {"title": "x", "ref": {"$ref": "room1-leak1-t"}, "tags": []})
    observer, _ = world.new_observer("scoped")
    world.ok("POST", f"/v1/observers/{observer}/observations",
             {"object": "room1-leak1", "keyPath": "ref.title", "options": ["new", "old"]}, token=scoped)

    out = world.ok("PATCH", "/v1/objects/room1-leak1", {"values": {"ref": {"$ref": "room2-leak1"}}})["revision"]
    hidden_write = world.ok("PATCH", "/v1/objects/room2-leak1", {"values": {"title": "secret, changed"}})["revision"]
    back = world.ok("PATCH", "/v1/objects/room1-leak1", {"values": {"ref": {"$ref": "room1-leak1-t"}}})["revision"]
    records = []
    deadline = time.monotonic() + 5
    while len(records) < 2 and time.monotonic() < deadline:
        records = [e["data"] for e in poll(world, observer, scoped, 0, wait=1)["events"] if e["event"] == "change"]
    assert [(r["revision"], r.get("old"), r.get("new")) for r in records] == [
        (out, "room1-leak1-t", None), (back, None, "room1-leak1-t")], records
    assert all(r["revision"] != hidden_write for r in records)
    assert "secret" not in json.dumps(records)
    # The admin's own observer of the same path sees the values: the nulls are the scoped view.
    admin_observer, _ = world.new_observer("admin")
    world.ok("POST", f"/v1/observers/{admin_observer}/observations",
             {"object": "room1-leak1", "keyPath": "ref.title", "options": ["new", "initial"]})
    world.ok("PATCH", "/v1/objects/room1-leak1", {"values": {"ref": {"$ref": "room2-leak1"}}})
    values = [e["data"].get("new") for e in poll(world, admin_observer, "admin", 0, wait=1)["events"]]
    assert values[-1] == "secret, changed"


def test_queries_never_show_unreadable_objects(world):
    """A query over Doc for a scoped observer, and POST /v1/query: no room2-*, `total` without
    them, through creations, deletions and repointed references (filters read them as null)."""
    scoped = world.tokens["scoped"]
    observer, _ = world.new_observer("scoped")
    definition = {"class": "Doc", "where": [["title", "prefix", "leak2"]], "select": ["title", "ref.title"]}
    by_ref = {"class": "Doc", "where": [["ref.title", "==", "leak2-secret"]]}
    base = f"/v1/observers/{observer}/queries"
    window = world.ok("POST", base, {**definition, "options": ["initial", "new", "old"]}, token=scoped)["query"]["id"]
    hidden = world.ok("POST", base, {**by_ref, "options": ["initial", "new"]}, token=scoped)["query"]["id"]
    seen = {"last": 0, "records": 0}

    def check(readable_ids):
        expected_ids = sorted(readable_ids)
        answer = world.ok("POST", "/v1/query", definition, token=scoped)
        assert [o["id"] for o in answer["objects"]] == expected_ids and answer["total"] == len(expected_ids), answer
        assert world.ok("POST", "/v1/query", by_ref, token=scoped) | {"revision": 0} == {
            "objects": [], "total": 0, "revision": 0}
        registered = world.ok("GET", f"{base}/{window}", token=scoped)
        assert registered["ids"] == expected_ids and registered["total"] == len(expected_ids), registered
        assert world.ok("GET", f"{base}/{hidden}", token=scoped)["total"] == 0
        events = poll(world, observer, scoped, seen["last"])["events"]
        for event in events:
            seen["last"] = event["id"]
            assert "room2-" not in json.dumps(event) and "leak2-secret" not in json.dumps(event), event
            assert event["event"] == "query", event
            assert event["data"]["query"] == window or event["data"].get("initial"), event
        totals = [e["data"]["total"] for e in events if e["data"]["query"] == window]
        assert not totals or totals[-1] == len(expected_ids), events
        seen["records"] += len(events)

    world.create("room1-leak2a", "Doc", {"title": "leak2 a", "tags": []})
    world.create("room2-leak2a", "Doc", {"title": "leak2-secret", "tags": []})
    world.create("room2-leak2b", "Doc", {"title": "leak2 b", "tags": []})
    check({"room1-leak2a"})
    world.create("room2-leak2c", "Doc", {"title": "leak2 c", "tags": []})
    world.create("room1-leak2b", "Doc", {"title": "leak2 b", "tags": [], "ref": {"$ref": "room2-leak2a"}})
    world.ok("PATCH", "/v1/objects/room1-leak2a", {"values": {"ref": {"$ref": "room2-leak2a"}}})
    check({"room1-leak2a", "room1-leak2b"})
    # The admin sees the room2 objects and the references: the scoped view is what hides them.
    assert world.ok("POST", "/v1/query", by_ref)["total"] == 2
    assert world.ok("POST", "/v1/query", definition)["total"] == 5
    world.ok("DELETE", "/v1/objects/room2-leak2c")
    world.ok("DELETE", "/v1/objects/room1-leak2b")
    world.ok("PATCH", "/v1/objects/room2-leak2b", {"values": {"title": "leak2 b, changed"}})
    world.ok("PATCH", "/v1/objects/room1-leak2a", {"values": {"ref": {"$ref": "room1-leak2a"}}})
    check({"room1-leak2a"})
    assert seen["records"] >= 4, "the scoped queries sent too few records to mean anything"


def test_idempotent_replay_never_hands_over_another_credentials_answer(world):
    """Section 7.3 meets section 13: a request another credential made under an Idempotency-Key,
    repeated byte for byte (same method, path, body, key) with a scoped token or JWT, must not
    answer the other's answer: for POST /v1/observers that answer holds the secret token of an
    observer the caller may not use (an admin-made observer's token reads everything)."""
    findings = []
    for first, second in [("admin", "scoped"), ("scoped", "jwt")]:
        key = f"matrix36-replay-{first}-{second}"
        body = {"lease": LEASE, "name": f"replayed-{first}"}
        original = world.ok("POST", "/v1/observers", body, token=world.tokens[first],
                            headers={"Idempotency-Key": key})
        before = world.mark()
        status, answer = world.call("POST", "/v1/observers", body, token=world.tokens[second],
                                    headers={"Idempotency-Key": key})
        if 200 <= status < 300 and answer.get("token") == original["token"]:
            world.assert_unchanged(before, "the replay")
            reads = world.call("GET", "/v1/objects/room2-a", token=answer["token"])[0]
            findings.append(f"POST /v1/observers {json.dumps(body)} with Idempotency-Key {key!r} as {second}, "
                            f"after {first} made it: {status} with {first}'s observer {original['id']} and its "
                            f"secret token (which then reads room2-a: {reads})")
            continue
        assert status in (201, 409), (status, answer)
        if status == 201:
            assert answer["id"] != original["id"] and answer.get("tokenId") == world.token_ids[second], answer
    assert not findings, "idempotent replays hand another credential's answer over: " + "; ".join(findings)


@pytest.mark.parametrize("name", ["scoped", "jwt", "owned", "observer(scoped)", "observer(admin)"])
def test_admin_stream_is_refused_to_scoped_tokens(world, name):
    token = world.tokens[name]
    for accept in ["text/event-stream", "application/x-ndjson", "application/json"]:
        for path, bearer in [("/v1/events", token), (f"/v1/events?access_token={token}", None)]:
            connection = world.server.connection(timeout=5)
            headers = {"Accept": accept} | ({"Authorization": f"Bearer {bearer}"} if bearer else {})
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            raw = response.read().decode()
            connection.close()
            assert response.status == 403 and json.loads(raw)["error"]["code"] == "forbidden", (accept, path, raw)


# ---------------------------------------------------------------------------------------------
# Streams end when their token does
# ---------------------------------------------------------------------------------------------


class Stream:
    """An SSE or NDJSON stream, or a waiting poll, read in a thread: `events`, `ended` (wall time)."""

    def __init__(self, server, path, token, mode):
        self.events, self.ended, self.error = [], None, None
        self.mode = mode
        accept = {"sse": "text/event-stream", "ndjson": "application/x-ndjson", "poll": "application/json"}[mode]
        self.connection = server.connection(timeout=40)
        self.connection.request("GET", path, headers={"Accept": accept, "Authorization": f"Bearer {token}"})
        if mode != "poll":  # a waiting poll's answer, headers included, comes when it ends
            self.response = self.connection.getresponse()
            assert self.response.status == 200, self.response.read()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        try:
            if self.mode == "poll":
                self.response = self.connection.getresponse()
                assert self.response.status == 200, self.response.read()
                answer = json.loads(self.response.read().decode())
                self.events = [(e["event"], e.get("id"), e["data"]) for e in answer["events"]]
            else:
                event, event_id, data = "message", None, []
                while line := self.response.readline():
                    line = line.decode().rstrip("\r\n")
                    if self.mode == "ndjson":
                        item = json.loads(line)
                        if item["event"] != "keep-alive":
                            self.events.append((item["event"], item.get("id"), item.get("data")))
                    elif not line:
                        if data:
                            self.events.append((event, event_id, json.loads("\n".join(data))))
                        event, event_id, data = "message", None, []
                    elif line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("id: "):
                        event_id = int(line[4:])
                    elif line.startswith("data: "):
                        data.append(line[6:])
        except Exception as error:  # noqa: BLE001 — reported by the test
            self.error = error
        finally:
            self.ended = time.time()

    def wait_synced(self):
        deadline = time.monotonic() + 5
        while not any(e[0] == "synced" for e in self.events):
            assert time.monotonic() < deadline and self.ended is None, (self.events, self.error)
            time.sleep(0.01)

    def wait_ended(self, timeout):
        deadline = time.monotonic() + timeout
        while self.ended is None and time.monotonic() < deadline:
            time.sleep(0.01)
        self.connection.close()
        return self.ended


def open_streams(world, token):
    """An observer made with `token`, and an SSE stream, an NDJSON stream and a waiting poll of it
    opened with `token`, and an SSE stream opened with the observer's own token."""
    observer = world.ok("POST", "/v1/observers", {"lease": LEASE}, token=token)
    path = f"/v1/observers/{observer['id']}/events"
    streams = {"sse": Stream(world.server, path, token, "sse"),
               "ndjson": Stream(world.server, path, token, "ndjson"),
               "poll": Stream(world.server, path + "?after=0&wait=30", token, "poll"),
               "sse, observer token": Stream(world.server, path, observer["token"], "sse")}
    for mode in ["sse", "ndjson", "sse, observer token"]:
        streams[mode].wait_synced()
    time.sleep(0.2)  # the poll is waiting by now
    assert all(s.ended is None for s in streams.values()), {m: (s.events, s.error) for m, s in streams.items()}
    return observer["id"], streams


def assert_ended(world, observer, streams, token_id, reason, since, token):
    for mode, stream in streams.items():
        ended = stream.wait_ended(5)
        assert ended is not None, f"the {mode} stream did not end"
        assert stream.error is None, (mode, stream.error)
        revoked = [e for e in stream.events if e[0] == "revoked"]
        assert revoked and revoked[-1] == stream.events[-1], (mode, stream.events)
        assert revoked[0][1] is None and revoked[0][2] == {"reason": reason, "token": token_id}, (mode, revoked)
        assert -0.05 < ended - since < 1.0, f"the {mode} stream ended {ended - since:.3f} s after the {reason}"
    assert world.call("GET", f"/v1/observers/{observer}")[0] == 200, "the token's observer must stay"
    status, answer = world.call("GET", f"/v1/observers/{observer}/events?wait=0", token=token,
                                headers={"Accept": "application/json"})
    assert status == 401 and answer["error"]["details"]["reason"] == reason


def test_revocation_ends_streams_within_a_second(world):
    token, token_id = world.make_token(SCOPES)
    observer, streams = open_streams(world, token)
    revoked_at = time.time()
    world.ok("DELETE", f"/v1/tokens/{token_id}")
    assert_ended(world, observer, streams, token_id, "revoked", revoked_at, token)


def rfc3339(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def test_expiry_ends_streams_within_a_second(world):
    answer = world.ok("POST", "/v1/tokens", {"scopes": SCOPES, "ttl": 2})
    observer, streams = open_streams(world, answer["token"])
    assert_ended(world, observer, streams, answer["id"], "expired", rfc3339(answer["expiresAt"]), answer["token"])


def test_jwt_streams_end_at_its_exp(world):
    exp = int(time.time()) + 2
    token = mint_jwt({"exp": exp, "jti": "jwt-stream36", "obs": {"scopes": SCOPES}})
    observer, streams = open_streams(world, token)
    assert_ended(world, observer, streams, "jwt-stream36", "expired", exp, token)


# ---------------------------------------------------------------------------------------------
# Algorithm confusion
# ---------------------------------------------------------------------------------------------


def openssl(*arguments, data=None):
    return subprocess.run(["openssl", *arguments], input=data, capture_output=True, check=True).stdout


def test_hs256_signed_with_the_public_key_is_refused(server_factory, tmp_path):
    """With `--jwt-public-key` (RSA: RS256), a token whose header says HS256 and whose HMAC key is
    the PEM public key (the classic confusion) is refused; a real RS256 token is accepted."""
    private, public = tmp_path / "key.pem", tmp_path / "public.pem"
    openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", str(private))
    openssl("pkey", "-in", str(private), "-pubout", "-out", str(public))
    server = server_factory("--jwt-public-key", str(public), token="admin").start()
    server.request("PUT", "/v1/classes/Doc", CLASS_DEFINITION)
    server.request("POST", "/v1/objects", {"id": "room1-a", "class": "Doc"})
    claims = {"exp": int(time.time()) + 600, "obs": {"scopes": SCOPES}}

    def status_of(token):
        status, answer = server.request("GET", "/v1/objects/room1-a", headers={"Authorization": f"Bearer {token}"})
        return status, (answer or {}).get("error", {}).get("details", {}).get("reason")

    head = b64url(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps(claims).encode())
    signature = openssl("dgst", "-sha256", "-sign", str(private), data=f"{head}.{payload}".encode())
    assert status_of(f"{head}.{payload}.{b64url(signature)}") == (200, None)  # the key works

    pem = public.read_bytes()
    for key in [pem, pem.strip()]:
        assert status_of(mint_jwt(claims, key=key)) == (401, "algorithm")
    none_head = b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    assert status_of(f"{none_head}.{payload}.")[0] == 401
    assert status_of(f"{head}.{payload}.{b64url(signature[:-1] + bytes([signature[-1] ^ 1]))}") == (401, "signature")
