"""Section 15 (transactions, issue 43) through the real server: the result of every kind of
operation; every refusal status, each leaving the state, the revision and the admin stream as they
were; `tx` on change records, query records, notifications and admin events, in the order the
contract gives (prior records, change records, query records, notifications); one record for a
key set twice; the idempotent replay; and the refusals of a scoped token."""

import json

import pytest

from conftest import EventStreamReader, ServerProcess, ok

ADMIN = "tx-admin"
MAX_OPS = 10
MAX_BODY = 65536
SCOPES = [{"allow": ["read", "write", "create", "delete"], "class": "Doc", "ids": "room1-*"},
          {"allow": ["post"], "names": "chat.room1.*"}]


@pytest.fixture(scope="module")
def server():
    server = ServerProcess("--max-transaction-ops", str(MAX_OPS), "--max-body-bytes", str(MAX_BODY), token=ADMIN)
    server.start()
    ok(*server.request("PUT", "/v1/classes/Manual", {"properties": {
        "n": {"type": "integer", "notify": "manual"}, "tags": {"type": "array"}}}), expected=(200, 201))
    ok(*server.request("PUT", "/v1/classes/Account", {"properties": {
        "balance": {"type": "integer"}, "note": {"type": "string"}}}), expected=(200, 201))
    ok(*server.request("PUT", "/v1/classes/Doc", {"properties": {"title": {"type": "string"}}}), expected=(200, 201))
    yield server
    server.stop()


def transact(server, body, headers=None):
    return server.request("POST", "/v1/transactions", body, headers=headers)


def create(server, object_id, values, class_name=None):
    ok(*server.request("POST", "/v1/objects", {"id": object_id, "values": values,
                                               **({"class": class_name} if class_name else {})}), expected=(201,))


def admin_events(server, after):
    """The admin stream's events after `after`, and its last id."""
    answer = ok(*server.request("GET", f"/v1/events?after={after}&limit=1000&wait=0",
                                headers={"Accept": "application/json"}))
    return answer["events"], answer["lastEventId"]


def mark(server):
    """(revision, admin stream's last id) now."""
    while True:
        events, last = admin_events(server, getattr(server, "admin_last", 0))
        if not events:
            return ok(*server.request("GET", "/v1/stats"))["revision"], last
        server.admin_last = last


def assert_unchanged(server, before, objects):
    """Nothing changed since `before` (a `mark`): the revision, the admin stream, the objects' bodies."""
    revision, last = before
    assert ok(*server.request("GET", "/v1/stats"))["revision"] == revision, "a refusal takes no revision"
    assert admin_events(server, last)[0] == [], "a refusal causes no admin event"
    for object_id, body in objects.items():
        assert server.request("GET", f"/v1/objects/{object_id}") == body, f"{object_id} changed"


def error_of(status, body):
    assert isinstance(body, dict) and "error" in body, (status, body)
    return body["error"]


# ---------------------------------------------------------------------------------------------
# Results, per kind of operation
# ---------------------------------------------------------------------------------------------


def test_each_kind_answers_its_single_requests_result_under_one_revision(server):
    create(server, "k1", {"n": 0, "tags": []}, "Manual")
    create(server, "k2", {"n": 0})
    create(server, "k3", {"n": 0})
    keeper = ok(*server.request("POST", "/v1/observers", {"lease": 600, "retainObserved": True}))["id"]
    ok(*server.request("POST", f"/v1/observers/{keeper}/observations", {"object": "k3", "keyPath": "n"}))
    ok(*server.request("POST", f"/v1/observers/{keeper}/subscriptions", {"name": "KindsDone"}))
    operations = [
        {"op": "create", "id": "k-new", "values": {"items": []}},
        {"op": "mutate", "object": "k-new", "keyPath": "items", "kind": "insertion", "indexes": [0], "values": ["x"]},
        {"op": "set", "object": "k1", "keyPath": "n", "value": 5},
        {"op": "patch", "object": "k1", "values": {"tags": ["a"]}},
        {"op": "mutate", "object": "k1", "keyPath": "tags", "kind": "insertion", "indexes": [1], "values": ["b"]},
        {"op": "notify", "object": "k1", "keyPaths": ["n"]},
        {"op": "delete", "object": "k2"},
        {"op": "delete", "object": "k3"},
        {"op": "post", "name": "KindsDone", "object": "k1", "userInfo": {"a": 1}},
    ]
    answer = ok(*transact(server, {"operations": operations}))
    revision = answer["revision"]
    assert "id" not in answer, "no `id` member without an id"
    created, *rest = answer["results"]
    assert created["id"] == "k-new" and created["values"] == {"items": []} and created["revision"] == revision, \
        "create answers the object as that operation created it"
    assert rest == [{}, {}, {}, {}, {}, {}, {"state": "releasePending", "retainedBy": [keeper]}, {"delivered": 1}]
    new = ok(*server.request("GET", "/v1/objects/k-new"))
    assert new["values"] == {"items": ["x"]} and new["revision"] == revision, "the mutate saw the create before it"
    k1 = ok(*server.request("GET", "/v1/objects/k1"))
    assert k1["values"] == {"n": 5, "tags": ["a", "b"]} and k1["revision"] == revision
    assert server.request("GET", "/v1/objects/k2")[0] == 404
    assert ok(*server.request("GET", "/v1/objects/k3"))["retainedBy"] == [keeper]
    assert ok(*server.request("GET", "/v1/stats"))["revision"] == revision, "one revision for all of it"


# ---------------------------------------------------------------------------------------------
# Refusals: each leaves everything as it was
# ---------------------------------------------------------------------------------------------

GOOD = [{"op": "set", "object": "ra", "keyPath": "balance", "value": 1},
        {"op": "patch", "object": "rb", "values": {"balance": 2}}]


def with_good(operation, at=1):
    """Good operations around `operation` at index `at`."""
    return GOOD[:at] + [operation] + GOOD[at:]


def refusals(revisions):
    """(name, body, status, code, details) of every refusal; `revisions`: ra's and rb's revisions."""
    ra = revisions["ra"]
    set_ra = GOOD[0]
    return [
        ("operations missing", {"expect": []}, 400, "invalidRequest", {}),
        ("operations empty", {"operations": []}, 400, "invalidRequest", {}),
        ("unknown member", {"operations": GOOD, "atomic": True}, 400, "invalidRequest", {}),
        ("unknown op", {"operations": with_good({"op": "increment", "object": "ra", "keyPath": "balance"})},
         400, "invalidRequest", {"operation": 1, "op": "increment"}),
        ("missing member", {"operations": with_good({"op": "set", "object": "ra", "keyPath": "balance"})},
         400, "invalidRequest", {"operation": 1}),
        # A member of the wrong type: its single request's code (section 2), as in any body.
        ("wrong type", {"operations": with_good({"op": "set", "object": 7, "keyPath": "balance", "value": 1})},
         400, "typeMismatch", {"operation": 1, "field": "object"}),
        ("an operation that is no object", {"operations": with_good(["set", "ra"])},
         400, "invalidRequest", {"operation": 1}),
        ("unknown member of an operation",
         {"operations": with_good({"op": "delete", "object": "rb", "force": True}, at=2)},
         400, "invalidRequest", {"operation": 2}),
        ("posting asap", {"operations": with_good({"op": "post", "name": "N", "posting": "asap"})},
         400, "invalidRequest", {"operation": 1}),
        ("coalesce", {"operations": with_good({"op": "post", "name": "N", "coalesce": ["name"]})},
         400, "invalidRequest", {"operation": 1}),
        ("invalid id", {"id": "tx 1", "operations": GOOD}, 400, "invalidRequest", {"field": "id"}),
        ("expect of two conditions", {"expect": [{"object": "ra", "exists": True, "ifRevision": ra}],
                                      "operations": GOOD}, 400, "invalidRequest", {"expect": 0}),
        ("invalid object id", {"operations": with_good({"op": "create", "id": "r new"})},
         400, "invalidName", {"operation": 1}),
        ("unknown key", {"operations": with_good({"op": "set", "object": "ra", "keyPath": "balanse", "value": 1})},
         400, "unknownKeyPath", {"operation": 1}),
        ("missing object", {"operations": with_good({"op": "set", "object": "nowhere", "keyPath": "n", "value": 1})},
         404, "notFound", {"operation": 1}),
        ("delete of a missing object", {"operations": with_good({"op": "delete", "object": "nowhere"}, at=2)},
         404, "notFound", {"operation": 2}),
        ("an object deleted by an operation before", {"operations": [
            {"op": "create", "id": "r-gone"}, {"op": "delete", "object": "r-gone"},
            {"op": "set", "object": "r-gone", "keyPath": "n", "value": 1}]}, 404, "notFound", {"operation": 2}),
        ("create of an existing id", {"operations": with_good({"op": "create", "id": "rb", "values": {}})},
         409, "conflict", {"operation": 1}),
        ("create twice", {"operations": [{"op": "create", "id": "r-new"}, set_ra, {"op": "create", "id": "r-new"}]},
         409, "conflict", {"operation": 2}),
        ("operation's ifRevision", {"operations": with_good(dict(set_ra, ifRevision=ra - 1))},
         412, "revisionMismatch", {"operation": 1}),
        ("ifRevision of an object the transaction created", {"operations": [
            {"op": "create", "id": "r-made", "values": {"n": 0}}, {"op": "set", "object": "r-made", "keyPath": "n",
                                                                   "value": 1, "ifRevision": ra}]},
         412, "revisionMismatch", {"operation": 1, "revision": None}),
        ("expect before the operations", {"expect": [{"object": "ra", "ifRevision": ra - 1}],
                                          "operations": with_good({"op": "delete", "object": "nowhere"})},
         412, "revisionMismatch", {"expect": 0, "revision": ra}),
        ("expect ifRevision", {"expect": [{"object": "ra", "ifRevision": ra - 1}], "operations": GOOD},
         412, "revisionMismatch", {"expect": 0, "revision": ra}),
        ("expect exists false", {"expect": [{"object": "ra", "exists": True}, {"object": "rb", "exists": False}],
                                 "operations": GOOD},
         412, "conditionFailed", {"expect": 1, "revision": revisions["rb"]}),
        ("expect exists true", {"expect": [{"object": "nowhere", "exists": True}], "operations": GOOD},
         412, "conditionFailed", {"expect": 0, "revision": None}),
        ("expect where", {"expect": [{"object": "ra", "where": [["balance", ">=", 100]]},
                                     {"object": "ra", "where": [["balance", ">", 100]]}], "operations": GOOD},
         412, "conditionFailed", {"expect": 1, "revision": ra}),
        ("expect where on a missing object", {"expect": [{"object": "nowhere", "where": [["balance", "==", None]]}],
                                              "operations": GOOD},
         412, "conditionFailed", {"expect": 0, "revision": None}),
        ("too many operations", {"operations": [set_ra] * (MAX_OPS + 1)}, 429, "limitExceeded", {"limit": MAX_OPS}),
        ("too many expects", {"expect": [{"object": "ra", "exists": True}] * 101, "operations": GOOD},
         400, "invalidRequest", {}),
    ]


REFUSALS = [case[0] for case in refusals({"ra": 0, "rb": 0})]


@pytest.fixture(scope="module")
def accounts(server):
    create(server, "ra", {"balance": 100, "note": ""}, "Account")
    create(server, "rb", {"balance": 100, "note": ""}, "Account")
    return {object_id: server.request("GET", f"/v1/objects/{object_id}") for object_id in ("ra", "rb")}


@pytest.mark.parametrize("name", REFUSALS)
def test_a_refused_transaction_changes_nothing(server, accounts, name):
    revisions = {object_id: body[1]["revision"] for object_id, body in accounts.items()}
    _, body, status, code, details = next(case for case in refusals(revisions) if case[0] == name)
    before = mark(server)
    answer = transact(server, body)
    error = error_of(*answer)
    assert answer[0] == status and error["code"] == code, answer
    for member, value in details.items():
        assert error["details"].get(member, "absent") == value, (member, error)
    assert_unchanged(server, before, accounts)


def post_raw(server, data, headers=None):
    """POST /v1/transactions of `data` as is: (status, JSON body, headers)."""
    connection = server.connection()
    try:
        connection.request("POST", "/v1/transactions", body=data, headers={
            "Authorization": f"Bearer {ADMIN}", "Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null"), dict(response.getheaders())
    finally:
        connection.close()


def body_over_the_limit(server):
    """A transaction whose Content-Length is over --max-body-bytes: answered before it is sent."""
    connection = server.connection()
    try:
        connection.putrequest("POST", "/v1/transactions")
        for name, value in (("Authorization", f"Bearer {ADMIN}"), ("Content-Type", "application/json"),
                            ("Content-Length", str(MAX_BODY + 1))):
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


def test_malformed_json_a_body_over_the_limit_and_a_header_key_other_than_the_id_change_nothing(server, accounts):
    before = mark(server)
    status, body = body_over_the_limit(server)
    assert status == 413 and error_of(status, body)["code"] == "payloadTooLarge", (status, body)
    status, body, _ = post_raw(server, b'{"operations": [')
    assert status == 400 and error_of(status, body)["code"] == "invalidJSON", (status, body)
    status, body, _ = post_raw(server, json.dumps({"id": "tx-header", "operations": GOOD}).encode(),
                               {"Idempotency-Key": "another"})
    error = error_of(status, body)
    assert status == 400 and error["code"] == "invalidRequest" and "header" in error["details"], (status, body)
    assert_unchanged(server, before, accounts)
    status, body, _ = post_raw(server, json.dumps({"id": "tx-header", "operations": [GOOD[0]]}).encode(),
                            {"Idempotency-Key": "tx-header"})
    assert status == 200 and body["id"] == "tx-header", "a header equal to the id is the same key"
    ok(*server.request("PUT", "/v1/objects/ra/values/balance", {"value": 100}))
    accounts.update({object_id: server.request("GET", f"/v1/objects/{object_id}") for object_id in ("ra", "rb")})


# ---------------------------------------------------------------------------------------------
# Records: order, `tx`, one record per registration
# ---------------------------------------------------------------------------------------------


def observe(server, object_ids, key_path="balance", options=("new", "old", "prior")):
    observer = ok(*server.request("POST", "/v1/observers", {"lease": 600}))["id"]
    for object_id in object_ids:
        ok(*server.request("POST", f"/v1/observers/{observer}/observations",
                           {"object": object_id, "keyPath": key_path, "options": list(options)}))
    return observer


def at(events, revision):
    """The (event, data) of a stream's events with that revision, in stream order."""
    return [(event, data) for event, _, data in list(events) if data.get("revision") == revision]


def test_records_of_a_transaction_come_in_order_and_carry_its_id(server):
    ok(*server.request("PUT", "/v1/classes/Flow", {"properties": {"balance": {"type": "integer"}}}), expected=(201,))
    create(server, "ta1", {"balance": 100}, "Flow")
    create(server, "ta2", {"balance": 100}, "Flow")
    observer = observe(server, ["ta1", "ta2"])
    ok(*server.request("POST", f"/v1/observers/{observer}/queries", {
        "class": "Flow", "where": [["balance", ">=", 100]], "orderBy": [["balance", "desc"]],
        "select": ["balance"], "options": ["new", "old"]}))
    ok(*server.request("POST", f"/v1/observers/{observer}/subscriptions", {"name": "Moved"}))
    stream = EventStreamReader(server, f"/v1/observers/{observer}/events")
    _, admin_last = mark(server)
    answer = ok(*transact(server, {"id": "tx-flow", "operations": [
        {"op": "set", "object": "ta1", "keyPath": "balance", "value": 70},
        {"op": "set", "object": "ta2", "keyPath": "balance", "value": 130},
        {"op": "post", "name": "Moved", "object": "ta1", "userInfo": {"amount": 30}},
        {"op": "create", "id": "ta-receipt", "values": {"amount": 30}}]}))
    revision = answer["revision"]
    assert answer["id"] == "tx-flow" and answer["results"][2] == {"delivered": 1}
    stream.wait_for(lambda event, _, data: event == "notification" and data["revision"] == revision)
    records = at(stream.events, revision)
    kinds = [("prior" if data.get("prior") else event, data.get("object")) for event, data in records]
    assert kinds == [("prior", "ta1"), ("prior", "ta2"), ("change", "ta1"), ("change", "ta2"), ("query", None),
                     ("notification", "ta1")], "prior records, change records, query records, notifications"
    assert all(data.get("tx") == "tx-flow" for _, data in records), records
    assert [(data.get("old"), data.get("new")) for _, data in records[:4]] == \
        [(100, None), (100, None), (100, 70), (100, 130)]
    query = records[4][1]
    assert [(item["id"], item["index"], item.get("old")) for item in query["removed"]] == \
        [("ta1", 0, {"balance": 100})], query
    assert [(item["id"], item["index"], item.get("old"), item.get("new")) for item in query["updated"]] == \
        [("ta2", 0, {"balance": 100}, {"balance": 130})] and query["inserted"] == [] and query["total"] == 1, query
    events, _ = admin_events(server, admin_last)
    caused = [(event["event"], event["data"]) for event in events if event["data"].get("revision") == revision]
    assert sorted(name for name, _ in caused) == ["notificationPosted", "objectCreated", "valueChanged",
                                                  "valueChanged"], caused
    assert all(data.get("tx") == "tx-flow" for _, data in caused), caused

    # Without an id: no `tx` member anywhere.
    _, admin_last = mark(server)
    plain = ok(*transact(server, {"operations": [
        {"op": "set", "object": "ta1", "keyPath": "balance", "value": 100},
        {"op": "post", "name": "Moved", "object": "ta1"}]}))["revision"]
    stream.wait_for(lambda event, _, data: event == "notification" and data["revision"] == plain)
    records = at(stream.events, plain)
    assert len(records) == 4 and not any("tx" in data for _, data in records), records
    events, _ = admin_events(server, admin_last)
    assert events and not any("tx" in event["data"] for event in events), events
    stream.close()


def test_admin_events_and_notifications_come_in_operation_order(server):
    create(server, "order-kept", {"n": 0})
    create(server, "order-gone", {"n": 0})
    keeper = ok(*server.request("POST", "/v1/observers", {"lease": 600, "retainObserved": True}))["id"]
    ok(*server.request("POST", f"/v1/observers/{keeper}/observations", {"object": "order-kept", "keyPath": "n"}))
    ok(*server.request("POST", f"/v1/observers/{keeper}/subscriptions", {}))
    stream = EventStreamReader(server, f"/v1/observers/{keeper}/events")
    _, admin_last = mark(server)
    revision = ok(*transact(server, {"id": "tx-order", "operations": [
        {"op": "post", "name": "First"},
        {"op": "create", "id": "order-new", "values": {"n": 1}},
        {"op": "delete", "object": "order-kept"},
        {"op": "set", "object": "order-new", "keyPath": "n", "value": 2},
        {"op": "delete", "object": "order-gone"},
        {"op": "post", "name": "Last"}]}))["revision"]
    stream.wait_for(lambda event, _, data: data.get("name") == "Last")
    assert [data["name"] for event, data in at(stream.events, revision) if event == "notification"] == \
        ["First", "Last"]
    events, _ = admin_events(server, admin_last)
    caused = [(event["event"], event["data"]) for event in events if event["data"].get("revision") == revision]
    assert [name for name, _ in caused] == ["notificationPosted", "objectCreated", "objectReleasePending",
                                            "valueChanged", "objectDeleted", "notificationPosted"], caused
    assert all(data.get("tx") == "tx-order" for _, data in caused), caused
    stream.close()


def test_a_key_changed_twice_gets_one_record_and_none_when_it_ends_where_it_began(server):
    create(server, "twice", {"balance": 10, "note": "a"}, "Account")
    observer = observe(server, ["twice"])
    ok(*server.request("POST", f"/v1/observers/{observer}/observations",
                       {"object": "twice", "keyPath": "note", "options": ["new"]}))
    stream = EventStreamReader(server, f"/v1/observers/{observer}/events")
    first = ok(*transact(server, {"id": "tx-twice", "operations": [
        {"op": "set", "object": "twice", "keyPath": "balance", "value": 5},
        {"op": "patch", "object": "twice", "values": {"balance": 7}},
        {"op": "set", "object": "twice", "keyPath": "balance", "value": 9}]}))["revision"]
    stream.wait_for(lambda event, _, data: event == "change" and data["revision"] == first and not data.get("prior"))
    back = ok(*transact(server, {"operations": [
        {"op": "set", "object": "twice", "keyPath": "balance", "value": 20},
        {"op": "set", "object": "twice", "keyPath": "balance", "value": 9}]}))["revision"]
    assert back > first
    fence = ok(*server.request("PUT", "/v1/objects/twice/values/note", {"value": "b"}))["revision"]
    stream.wait_for(lambda event, _, data: data.get("revision") == fence)
    records = [(data.get("prior", False), data.get("kind"), data.get("old"), data.get("new"), data.get("tx"))
               for _, data in at(stream.events, first)]
    assert records == [(True, "setting", 10, None, "tx-twice"), (False, "setting", 10, 9, "tx-twice")], records
    assert at(stream.events, back) == [], "a key that ends where it began gets no record"
    stream.close()


def one_op_records(server, object_id, operations):
    """The records at the transaction's revision of an observer of `n` and `tags` (options new, old)
    of the Manual object `object_id` (n 1, tags ["a"]), by key path; and how many there were."""
    create(server, object_id, {"n": 1, "tags": ["a"]}, "Manual")
    observer = ok(*server.request("POST", "/v1/observers", {"lease": 600}))["id"]
    ok(*server.request("POST", f"/v1/observers/{observer}/observations",
                       {"object": object_id, "keyPaths": ["n", "tags"], "options": ["new", "old"]}))
    stream = EventStreamReader(server, f"/v1/observers/{observer}/events")
    revision = ok(*transact(server, {"id": f"tx-{object_id}", "operations": operations}))["revision"]
    fence = ok(*server.request("POST", f"/v1/objects/{object_id}/notify", {"keyPaths": ["tags"]}))["revision"]
    stream.wait_for(lambda event, _, data: data.get("revision") == fence)
    records = at(stream.events, revision)
    stream.close()
    return {data["keyPath"]: {key: data.get(key) for key in ("kind", "indexes", "old", "new", "tx")}
            for _, data in records}, len(records)


def test_a_registration_one_operation_reaches_gets_that_operations_record(server):
    """A `mutate` gives its insertion record; a `set` of a manual key gives none."""
    records, count = one_op_records(server, "one-op", [
        {"op": "set", "object": "one-op", "keyPath": "n", "value": 5},
        {"op": "mutate", "object": "one-op", "keyPath": "tags", "kind": "insertion", "indexes": [1], "values": ["b"]}])
    assert count == 1 and records == {
        "tags": {"kind": "insertion", "indexes": [1], "old": None, "new": ["b"], "tx": "tx-one-op"}}, records


def test_a_manual_key_set_then_notified_in_one_transaction_gets_the_notify_record(server):
    """Section 15: a registration one operation affected gets that single request's record. The `set`
    of a manual key affects no registration (6.3); the `notify` after it sends `old` = the value at
    the last notification, `new` = the current one, as PUT then POST …/notify do."""
    records, count = one_op_records(server, "manual-op", [
        {"op": "set", "object": "manual-op", "keyPath": "n", "value": 5},
        {"op": "notify", "object": "manual-op", "keyPaths": ["n"]}])
    assert count == 1 and records == {
        "n": {"kind": "setting", "indexes": None, "old": 1, "new": 5, "tx": "tx-manual-op"}}, records


# ---------------------------------------------------------------------------------------------
# The id as the idempotency key
# ---------------------------------------------------------------------------------------------


def test_the_same_id_and_body_answers_the_first_answer_and_changes_nothing(server):
    create(server, "idem", {"balance": 0}, "Account")
    body = {"id": "tx-idem", "operations": [{"op": "set", "object": "idem", "keyPath": "balance", "value": 1},
                                            {"op": "create", "id": "idem-receipt", "values": {"n": 1}}]}
    first = ok(*transact(server, body))
    state = {object_id: server.request("GET", f"/v1/objects/{object_id}") for object_id in ("idem", "idem-receipt")}
    before = mark(server)
    status, again, headers = post_raw(server, json.dumps(body).encode())
    assert (status, again) == (200, first) and headers.get("Idempotent-Replayed") == "true", "the first answer again"
    assert_unchanged(server, before, state)
    status, answer = transact(server, dict(body, operations=body["operations"][:1]))
    error = error_of(status, answer)
    assert status == 409 and error["code"] == "idempotencyKeyReused" and error["details"].get("id") == "tx-idem", \
        (status, answer)
    assert_unchanged(server, before, state)

    # A refused transaction keeps nothing: its id, corrected, applies at once.
    revision = state["idem"][1]["revision"]
    stale = {"id": "tx-corrected", "expect": [{"object": "idem", "ifRevision": revision - 1}],
             "operations": body["operations"][:1]}
    assert transact(server, stale)[0] == 412
    assert_unchanged(server, before, state)
    corrected = ok(*transact(server, dict(stale, expect=[{"object": "idem", "ifRevision": revision}])))
    assert corrected["id"] == "tx-corrected" and corrected["revision"] == before[0] + 1

    # Without an id, an Idempotency-Key header works as for any write.
    plain = json.dumps({"operations": [{"op": "set", "object": "idem", "keyPath": "balance", "value": 2}]}).encode()
    status, first, headers = post_raw(server, plain, {"Idempotency-Key": "idem-header"})
    assert status == 200 and "id" not in first and "Idempotent-Replayed" not in headers, (status, first)
    state = {"idem": server.request("GET", "/v1/objects/idem")}
    before = mark(server)
    status, again, headers = post_raw(server, plain, {"Idempotency-Key": "idem-header"})
    assert (status, again) == (200, first) and headers.get("Idempotent-Replayed") == "true"
    assert_unchanged(server, before, state)


# ---------------------------------------------------------------------------------------------
# Scoped tokens: each operation authorized as its single request
# ---------------------------------------------------------------------------------------------


def test_a_scoped_token_is_refused_the_whole_transaction_for_one_operation(server):
    create(server, "room1-a", {"title": "one"}, "Doc")
    create(server, "room2-a", {"title": "two"}, "Doc")
    token = ok(*server.request("POST", "/v1/tokens", {"scopes": SCOPES}), expected=(201,))["token"]
    scoped = {"Authorization": f"Bearer {token}"}
    state = {object_id: server.request("GET", f"/v1/objects/{object_id}") for object_id in ("room1-a", "room2-a")}
    mine = {"op": "set", "object": "room1-a", "keyPath": "title", "value": "changed"}
    cases = [
        ({"operations": [mine, {"op": "set", "object": "room2-a", "keyPath": "title", "value": "x"}]}, "operation", 1),
        ({"operations": [mine, mine, {"op": "create", "id": "room2-b", "class": "Doc"}]}, "operation", 2),
        ({"operations": [{"op": "delete", "object": "room2-a"}, mine]}, "operation", 0),
        ({"operations": [mine, {"op": "post", "name": "chat.room2.hello"}]}, "operation", 1),
        ({"operations": [mine, {"op": "notify", "object": "room2-a", "keyPaths": ["title"]}]}, "operation", 1),
        # The first refusal in operation order answers: a missing object it might write (404) before a 403.
        ({"operations": [mine, {"op": "set", "object": "room1-none", "keyPath": "title", "value": "x"},
                         {"op": "delete", "object": "room2-a"}]}, "operation", 1),
        ({"expect": [{"object": "room1-a", "exists": True}, {"object": "room2-a", "exists": True}],
          "operations": [mine]}, "expect", 1),
    ]
    before = mark(server)
    for body, member, index in cases:
        status, answer = transact(server, body, headers=scoped)
        error = error_of(status, answer)
        refusal = (404, "notFound") if "room1-none" in json.dumps(body) else (403, "forbidden")
        assert (status, error["code"]) == refusal and error["details"].get(member) == index, (body, status, answer)
        assert_unchanged(server, before, state)
    answer = ok(*transact(server, {"id": "tx-scoped", "operations": [
        mine, {"op": "create", "id": "room1-b", "class": "Doc"}, {"op": "post", "name": "chat.room1.hello"}]},
        headers=scoped))
    assert ok(*server.request("GET", "/v1/objects/room1-a"))["values"]["title"] == "changed"
    assert ok(*server.request("GET", "/v1/objects/room1-b"))["revision"] == answer["revision"]

    # An id is the idempotency key of the credential that sent it: the admin's is not the token's.
    shared = {"id": "tx-shared", "operations": [{"op": "set", "object": "room1-a", "keyPath": "title", "value": "a"}]}
    admins = ok(*transact(server, shared))
    tokens = ok(*transact(server, shared, headers=scoped))
    assert tokens["revision"] > admins["revision"], "applied again for the token, not the admin's answer"
