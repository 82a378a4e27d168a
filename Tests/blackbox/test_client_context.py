"""The managed object context (/client/context.js) in a real browser against the real server.

- Offline (DevTools `Network.emulateNetworkConditions`): edits show at once in the page's live query
  window, saves are queued in IndexedDB; a reload keeps them (the page must load, so during the reload
  only `/v1/transactions` stays unreachable, with `Network.setBlockedURLs`); back online each is saved
  exactly once, and a second page sees them in the same revision order.
- Two pages edit the same object under each merge policy; the end state is what the policy promises.
- With 300 ms of added latency, an edit reaches the page's own query window in under 50 ms.
"""

import pytest

from test_client import open_page, run, until

CARDS = [("card-1", "one", 1), ("card-2", "two", 2), ("card-3", "three", 3)]

SETUP = """
    window.client = new obs.ObsClient({ name: args[0] });
    window.ctx = client.context({ retryMs: 200, mergePolicy: args[1] === "rebase"
      ? (context, server) => context.set(args[2], "title", server.get(args[2]).values.title + "+" + args[0])
      : args[1] });
    window.events = { saved: [], queued: [], conflict: [], change: 0, shown: [] };
    ctx.on("saved", (event) => events.saved.push(event.id));
    ctx.on("queued", (event) => events.queued.push(event.id));
    ctx.on("conflict", (conflict) => events.conflict.push(conflict.policy));
    ctx.on("change", () => { events.change += 1; });
    await ctx.ready;
    const observer = await client.createObserver();
    window.cards = await observer.query({ where: [["kind", "==", "card"]], orderBy: [["rank", "asc"]], select: ["title", "rank"] }, {
      onChange: (change) => events.shown.push([performance.now(), change.members.map((member) => member.values.title)]),
    });
    return cards.members.map((member) => member.values.title);
"""

TITLES = "cards.members.map((member) => member.values.title)"


def make_cards(server):
    for id, title, rank in CARDS:
        status, _ = server.request("POST", "/v1/objects", {"id": id, "values": {"kind": "card", "title": title, "rank": rank}})
        assert status == 201


def network(browser, offline=False, latency=0, blocked=()):
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": list(blocked)})  # first: going online sends the queue
    browser.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": offline, "latency": latency, "downloadThroughput": -1, "uploadThroughput": -1})


def watch_in_a_second_page(browser, server):
    """A second tab whose stream records every change of the cards' titles: [(revision, object, new, tx)]."""
    browser.switch_to.new_window("tab")
    network(browser)
    open_page(browser, server)
    run(browser, """
        const client = new obs.ObsClient({ name: "watcher" });
        const observer = await client.createObserver();
        for (const id of args[0]) await observer.observe(id, "title", { options: ["new"] });
        Object.assign(window, record(observer));
    """, [id for id, _, _ in CARDS])
    until(browser, "seen.synced.length === 1")
    return browser.current_window_handle


def test_offline_edits_show_at_once_survive_a_reload_and_are_saved_once_each_in_order(server_factory, browser):
    server = server_factory().start()
    make_cards(server)
    open_page(browser, server)
    first = browser.current_window_handle
    run(browser, "indexedDB.deleteDatabase('obs-client')")
    assert run(browser, SETUP, "editor", "error") == ["one", "two", "three"]
    network(browser, offline=True)
    shown = run(browser, """
        ctx.set("card-1", "title", "A1");
        const now = cards.members.map((member) => member.values.title);
        const saves = [ctx.save()];
        ctx.set("card-2", "title", "B1");
        saves.push(ctx.save());
        ctx.set("card-1", "title", "A2");
        ctx.set("card-3", "rank", 0);
        saves.push(ctx.save());
        return [now, await Promise.all(saves)];
    """)
    assert shown[0] == ["A1", "two", "three"], "shown at once, before any answer"
    assert [answer["queued"] for answer in shown[1]] == [True, True, True]
    ids = [answer["id"] for answer in shown[1]]
    assert until(browser, TITLES) == ["three", "A2", "B1"]
    assert server.request("GET", "/v1/objects/card-1")[1]["values"]["title"] == "one"

    # The reload: the page loads, transactions stay unreachable; the queue is back and shown.
    network(browser, blocked=["*/v1/transactions*"])
    open_page(browser, server)
    assert run(browser, SETUP, "editor", "error") == ["three", "A2", "B1"]
    assert run(browser, "return ctx.queued.map((entry) => entry.id)") == ids
    until(browser, "events.queued.length === 3", message="still queued after the reload")
    second = watch_in_a_second_page(browser, server)
    revision_before = server.request("GET", "/v1/stats")[1]["revision"]
    browser.switch_to.window(first)
    network(browser)  # back online
    until(browser, "events.saved.length === 3", timeout=20, message="the queue was not sent")
    assert run(browser, "return events.saved") == ids
    until(browser, "ctx.queued.length === 0 && ctx.sender.entries.length === 0")
    assert run(browser, "return " + TITLES) == ["three", "A2", "B1"]
    assert run(browser, "return new Promise((resolve) => { const r = indexedDB.open('obs-client'); "
                        "r.onsuccess = () => r.result.transaction('outbox').objectStore('outbox').count().onsuccess = "
                        "(e) => resolve(e.target.result); })") == 0

    browser.switch_to.window(second)
    until(browser, "seen.batches.filter((b) => b.events.some((e) => e.data.tx)).length === 3")
    records = browser.execute_script("""
        return seen.batches.flatMap((batch) => batch.events).filter((event) => event.event === "change")
          .map((event) => [event.data.revision, event.data.object, event.data.new, event.data.tx]);
    """)
    assert [(r[1], r[2], r[3]) for r in records] == [
        ("card-1", "A1", ids[0]), ("card-2", "B1", ids[1]), ("card-1", "A2", ids[2])]
    revisions = [r[0] for r in records]
    assert revisions == sorted(set(revisions)), "one revision each, in the queue's order"
    assert server.request("GET", "/v1/stats")[1]["revision"] == revision_before + 3, "each saved exactly once"
    browser.close()
    browser.switch_to.window(first)


POLICIES = {
    "error": ("A", True),
    "serverWins": ("A", False),
    "clientWins": ("B", False),
    "rebase": ("A+B", False),
}


@pytest.mark.parametrize("policy", POLICIES)
def test_two_pages_edit_one_object_and_the_merge_policy_decides(server_factory, browser, policy):
    server = server_factory().start()
    make_cards(server)
    open_page(browser, server)
    first = browser.current_window_handle
    run(browser, "indexedDB.deleteDatabase('obs-client')")
    run(browser, SETUP, "A", policy, "card-1")
    run(browser, "await ctx.load('card-1'); ctx.set('card-1', 'title', 'A')")
    browser.switch_to.new_window("tab")
    open_page(browser, server)
    run(browser, SETUP, "B", policy, "card-1")
    run(browser, "await ctx.load('card-1'); ctx.set('card-1', 'title', 'B')")
    browser.switch_to.window(first)
    assert "revision" in run(browser, "return ctx.save()")
    browser.switch_to.window(browser.window_handles[-1])
    outcome = run(browser, """
        try {
          const answer = await ctx.save();
          return { resolution: answer.resolution ?? null, saved: answer.revision > 0 };
        } catch (error) { return { rejected: error.status }; }
    """)
    final, pending = POLICIES[policy]
    until(browser, "events.conflict.length === 1")
    assert run(browser, "return events.conflict") == [policy]
    assert server.request("GET", "/v1/objects/card-1")[1]["values"]["title"] == final
    assert run(browser, "return ctx.hasChanges") == pending
    assert outcome == {"error": {"rejected": 412}, "serverWins": {"resolution": "serverWins", "saved": False},
                       "clientWins": {"resolution": None, "saved": True}, "rebase": {"resolution": None, "saved": True}}[policy]
    if policy == "error":
        assert run(browser, "return ctx.get('card-1').title") == "B", "ours stays shown, pending"
    else:
        until(browser, f"ctx.get('card-1').title === {final!r} && {TITLES}[0] === {final!r}")
    browser.close()
    browser.switch_to.window(first)
    until(browser, f"{TITLES}[0] === {final!r}")


def test_with_300_ms_of_latency_an_edit_reaches_the_pages_own_window_in_under_50_ms(server_factory, browser):
    server = server_factory().start()
    make_cards(server)
    open_page(browser, server)
    run(browser, "indexedDB.deleteDatabase('obs-client')")
    run(browser, SETUP, "editor", "error")
    network(browser, latency=300)
    elapsed = run(browser, """
        const start = performance.now();
        ctx.set("card-1", "title", "fast");
        // When the window told the page (its onChange), and what it holds now.
        const [reached] = events.shown.find(([, titles]) => titles[0] === "fast") ?? [Infinity];
        if (cards.members[0].values.title !== "fast") return [Infinity];
        const saving = ctx.save();
        const seen = events.shown.length;
        const answer = await saving;
        return [reached - start, answer.revision > 0, events.shown.slice(seen).every(([, titles]) => titles[0] === "fast")];
    """)
    assert elapsed[0] < 50, f"the edit took {elapsed[0]:.1f} ms to reach the window"
    assert elapsed[1:] == [True, True], "saved, and the window never showed the old title meanwhile"
    until(browser, "ctx.sender.entries.length === 0", timeout=10)
    network(browser)
