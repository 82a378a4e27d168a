"""Transactions (contract 15) through the JavaScript client (/client/obs.js), in a real browser against
the real server: a transfer is one revision and one batch whose records carry its id as `tx`; a
refusal rejects with the index of the condition or operation and changes nothing; a transaction
retried after a lost answer is applied once.
"""

from test_client import RECORDING_FETCH, open_page, run, until

TRANSFER = """
    return client.transaction([
      { op: "set", object: "acct-1", keyPath: "balance", value: args[0] - args[2] },
      { op: "set", object: "acct-2", keyPath: "balance", value: args[1] + args[2] },
    ], { id: args[3], expect: [{ object: "acct-1", where: [["balance", ">=", args[2]]] }] });
"""

REFUSED = """
    try { await client.transaction(args[0], args[1]); } catch (error) {
      return [error.name, error.status, error.code, error.details];
    }
"""


def start(server_factory, browser):
    """A server with acct-1 (100) and acct-2 (50), and a page whose client records its requests and
    whose observer streams both balances (`seen`, `stream`); returns the server."""
    server = server_factory().start()
    open_page(browser, server)
    run(browser, RECORDING_FETCH + """
        window.client = new obs.ObsClient({ fetch: recordingFetch, name: "teller" });
        await client.createObject({ id: "acct-1", values: { balance: 100 } });
        await client.createObject({ id: "acct-2", values: { balance: 50 } });
        const observer = await client.createObserver();
        await observer.observe("acct-1", "balance", { options: ["new", "old"] });
        await observer.observe("acct-2", "balance", { options: ["new", "old"] });
        Object.assign(window, record(observer));
    """)
    until(browser, "seen.synced.length === 1")
    return server


def batches_of(browser, tx):
    """The stream's batches that hold a record of transaction `tx`: [(revision, [record])]."""
    return browser.execute_script("""
        return seen.batches.filter((batch) => batch.events.some((event) => event.data.tx === arguments[0]))
          .map((batch) => [batch.revision, batch.events.map((event) => event.data)]);
    """, tx)


def test_a_transfer_is_one_revision_and_one_batch_whose_records_carry_its_id(server_factory, browser):
    start(server_factory, browser)
    answer = run(browser, TRANSFER, 100, 50, 30, "transfer-1")
    assert answer == {"revision": answer["revision"], "id": "transfer-1", "results": [{}, {}]}
    until(browser, "stream.value('acct-2', 'balance') === 80")
    [(revision, records)] = batches_of(browser, "transfer-1")
    assert revision == answer["revision"]
    assert [(r["object"], r["old"], r["new"], r["revision"], r["tx"], r["by"]) for r in records] == [
        ("acct-1", 100, 70, revision, "transfer-1", "teller"),
        ("acct-2", 50, 80, revision, "transfer-1", "teller"),
    ]
    # A transaction without an id: no tx on what it causes.
    plain = run(browser, "return client.transaction([{ op: 'set', object: 'acct-1', keyPath: 'balance', value: 71 }])")
    assert plain == {"revision": plain["revision"], "results": [{}]}
    until(browser, "stream.value('acct-1', 'balance') === 71")
    last = browser.execute_script("return seen.batches.at(-1).events.map((event) => event.data)")
    assert [("tx" in r, r["revision"]) for r in last] == [(False, plain["revision"])]


def test_refusals_name_the_condition_or_operation_and_change_nothing(server_factory, browser):
    server = start(server_factory, browser)
    before = server.request("GET", "/v1/stats")[1]["revision"]
    acct1 = server.request("GET", "/v1/objects/acct-1")[1]["revision"]
    transfer = [
        {"op": "set", "object": "acct-1", "keyPath": "balance", "value": -400},
        {"op": "set", "object": "acct-2", "keyPath": "balance", "value": 550},
    ]
    overdraw = run(browser, REFUSED, transfer, {"id": "transfer-2", "expect": [
        {"object": "acct-2", "exists": True}, {"object": "acct-1", "where": [["balance", ">=", 500]]}]})
    assert overdraw == ["ObsError", 412, "conditionFailed", {"expect": 1, "revision": acct1}], overdraw
    stale = run(browser, REFUSED, transfer, {"expect": [{"object": "acct-1", "ifRevision": acct1 - 1}]})
    assert stale[:3] == ["ObsError", 412, "revisionMismatch"] and stale[3]["expect"] == 0, stale
    assert stale[3]["revision"] == acct1
    absent = run(browser, REFUSED, transfer, {"expect": [{"object": "nobody", "exists": True}]})
    assert absent[:3] == ["ObsError", 412, "conditionFailed"] and absent[3]["expect"] == 0, absent
    assert absent[3]["revision"] is None
    missing = run(browser, REFUSED, [*transfer, {"op": "delete", "object": "nobody"}], {})
    assert missing[:3] == ["ObsError", 404, "notFound"] and missing[3]["operation"] == 2, missing
    malformed = run(browser, REFUSED, [transfer[0], {"op": "frob", "object": "acct-1"}], {})
    assert malformed[:3] == ["ObsError", 400, "invalidRequest"] and malformed[3]["operation"] == 1, malformed
    empty = run(browser, REFUSED, [], {})
    assert empty[:3] == ["ObsError", 400, "invalidRequest"], empty

    assert server.request("GET", "/v1/stats")[1]["revision"] == before, "a refused transaction took a revision"
    assert [server.request("GET", f"/v1/objects/{id}/values/balance")[1]["value"] for id in ("acct-1", "acct-2")] == [100, 50]
    assert batches_of(browser, "transfer-2") == []
    # Refusals are not retried: one request each.
    posts = [r for r in browser.execute_script("return requests") if r["url"].endswith("/v1/transactions")]
    assert len(posts) == 6


def test_a_transaction_retried_after_a_lost_answer_is_applied_once(server_factory, browser):
    start(server_factory, browser)
    run(browser, "trouble.POST = 'lose'")
    answer = run(browser, TRANSFER, 100, 50, 30, "transfer-3")
    posts = [r for r in browser.execute_script("return requests") if r["url"].endswith("/v1/transactions")]
    assert [(r["headers"]["idempotency-key"], r["status"]) for r in posts] == [("transfer-3", 200), ("transfer-3", 200)]
    # The same id with another body is refused, and changes nothing either.
    reused = run(browser, REFUSED, [{"op": "set", "object": "acct-1", "keyPath": "balance", "value": 0}], {"id": "transfer-3"})
    assert reused[:3] == ["ObsError", 409, "idempotencyKeyReused"], reused
    run(browser, "await client.setValue('acct-1', 'balance', 1)")  # a write after it: the stream has all before
    until(browser, "stream.value('acct-1', 'balance') === 1")
    [(revision, records)] = batches_of(browser, "transfer-3")
    assert revision == answer["revision"] and len(records) == 2, "the retried transaction was applied twice"
