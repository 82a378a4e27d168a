"""Transactions (contract 15) in the dashboard's live feed, in headless chromium against the real server:
a transaction's admin events (the same `tx` and revision) are one entry, labelled with its id, that
opens to show them; the filters find it by any of its events; one without an id stays separate events.
"""

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from test_client import run
from test_dashboard import attribute_values, click, created, open_dashboard, shown, wait

ENTRY = '#feed > li[data-kind="transaction"][data-tx="{}"]'


def transact(server, body):
    status, answer = server.request("POST", "/v1/transactions", body)
    assert status == 200, answer
    return answer


def test_a_transactions_events_are_one_feed_entry_that_opens_to_them(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 100}})
    created(server, "/v1/objects", {"id": "acct-2", "values": {"balance": 50}})
    open_dashboard(browser, server)
    answer = transact(server, {"id": "order-7", "operations": [
        {"op": "set", "object": "acct-1", "keyPath": "balance", "value": 70},
        {"op": "set", "object": "acct-2", "keyPath": "balance", "value": 80},
        {"op": "create", "id": "order-7", "values": {"total": 30}},
        {"op": "post", "name": "OrderPlaced", "object": "order-7"},
    ]})
    entry = ENTRY.format("order-7")
    shown(browser, entry, "order-7")
    shown(browser, entry, "valueChanged ×2")
    shown(browser, entry, f"(rev {answer['revision']})")
    text = browser.find_element(By.CSS_SELECTOR, f"{entry} summary").text
    assert "objectCreated" in text and "notificationPosted" in text, text
    # One entry: none of its events is an entry of its own, and closed, they are not shown.
    assert attribute_values(browser, "#feed > li", "data-kind").count("valueChanged") == 0
    assert attribute_values(browser, "#feed > li", "data-kind").count("objectCreated") == 2  # acct-1, acct-2
    inner = f'{entry} li[data-kind="valueChanged"][data-object="acct-2"]'
    assert not browser.find_element(By.CSS_SELECTOR, inner).is_displayed()

    click(browser, f"{entry} summary")
    wait(browser).until(EC.visibility_of_element_located((By.CSS_SELECTOR, inner)))
    shown(browser, inner, "acct-2.balance = 80")
    assert attribute_values(browser, f"{entry} li", "data-kind") == \
        ["valueChanged", "valueChanged", "objectCreated", "notificationPosted"]

    # Later events are entries of their own; the open entry stays open.
    server.request("PUT", "/v1/objects/acct-1/values/balance", {"value": 71})
    shown(browser, '#feed > li[data-kind="valueChanged"][data-object="acct-1"]', "acct-1.balance = 71")
    assert browser.find_element(By.CSS_SELECTOR, inner).is_displayed()

    # A transaction without an id has no tx: its events stay separate entries.
    transact(server, {"operations": [{"op": "set", "object": "acct-2", "keyPath": "balance", "value": 81}]})
    shown(browser, '#feed > li[data-kind="valueChanged"][data-object="acct-2"]', "acct-2.balance = 81")
    assert len(browser.find_elements(By.CSS_SELECTOR, '#feed > li[data-kind="transaction"]')) == 1

    # The filters find the entry by any of its events; the kind "transaction" shows transactions only.
    field = browser.find_element(By.ID, "feed-object")
    field.send_keys("order-7")
    wait(browser).until(lambda b: attribute_values(b, "#feed > li", "data-tx") == ["order-7"])
    field.clear()
    field.send_keys(" ")
    kind = browser.find_element(By.ID, "feed-kind")
    kind.send_keys("transaction")  # typed, as a user picks it: the page listens for input
    wait(browser).until(lambda b: attribute_values(b, "#feed > li", "data-tx") == ["order-7"])
    assert browser.find_element(By.CSS_SELECTOR, inner).is_displayed(), "a redraw closed the open entry"
    kind.send_keys("notificationPosted")
    wait(browser).until(lambda b: attribute_values(b, "#feed > li", "data-tx") == ["order-7"])


def test_a_transaction_of_a_hundred_events_is_one_entry(server_factory, browser):
    server = server_factory().start()
    for n in range(100):
        created(server, "/v1/objects", {"id": f"acct-{n}", "values": {"balance": n}})
    open_dashboard(browser, server)
    answer = transact(server, {"id": "payday", "operations": [
        {"op": "set", "object": f"acct-{n}", "keyPath": "balance", "value": n + 1} for n in range(100)]})
    entry = ENTRY.format("payday")
    # The admin stream sends them one by one, over any number of frames: the entry grows in place.
    shown(browser, entry, "100 events: valueChanged ×100", timeout=10)
    shown(browser, entry, f"(rev {answer['revision']})")
    assert len(browser.find_elements(By.CSS_SELECTOR, entry)) == 1
    assert len(browser.find_elements(By.CSS_SELECTOR, f"{entry} li")) == 100
    assert attribute_values(browser, "#feed > li", "data-kind").count("valueChanged") == 0


def test_a_watched_observers_records_and_notifications_name_their_transaction(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 100}})
    observer = created(server, "/v1/observers", {"name": "ledger"})
    created(server, f"/v1/observers/{observer['id']}/observations",
            {"object": "acct-1", "keyPath": "balance", "options": ["new", "old"]})
    created(server, f"/v1/observers/{observer['id']}/subscriptions", {"name": "Paid"})
    open_dashboard(browser, server)
    click(browser, f'tr[data-observer="{observer["id"]}"] button')
    wait(browser).until(EC.visibility_of_element_located((By.ID, "watch-panel")))
    transact(server, {"id": "pay-1", "operations": [
        {"op": "set", "object": "acct-1", "keyPath": "balance", "value": 70},
        {"op": "post", "name": "Paid", "object": "acct-1"}]})
    shown(browser, '#watch-list li[data-kind="change"][data-tx="pay-1"]', "acct-1.balance setting old 100 new 70")
    shown(browser, '#watch-list li[data-kind="change"][data-tx="pay-1"]', "tx pay-1")
    shown(browser, '#watch-list li[data-kind="notification"][data-tx="pay-1"]', "tx pay-1")
    server.request("PUT", "/v1/objects/acct-1/values/balance", {"value": 71})
    shown(browser, '#watch-list li[data-kind="change"]:first-child', "new 71")
    assert browser.find_element(By.CSS_SELECTOR, "#watch-list li:first-child").get_attribute("data-tx") is None


# The feed view alone, in a page of the server's origin, fed events by hand with a frame between them:
# a transaction's events may reach the page over several frames (the admin stream sends them one by one).
FEED_PAGE = """
    document.body.innerHTML = `<input id="o"><input id="b"><select id="k"><option value=""></option>
      <option>transaction</option><option>notificationPosted</option></select><button id="p"></button><ol id="feed"></ol>`;
    const { FeedView } = await import("/js/views/feed.js");
    const $ = (id) => document.getElementById(id);
    window.feed = new FeedView({ list: $("feed"), object: $("o"), observer: $("b"), kind: $("k"), pause: $("p") });
    window.frame = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve)));
    window.set = (object, value, id, tx) => feed.add("valueChanged", { object, keyPath: "balance", value, revision: 9, tx }, id);
    window.posted = (id, tx) => feed.add("notificationPosted", { name: "Paid", object: "acct-1", delivered: 0, revision: 9, tx }, id);
    window.entries = () => [...document.querySelectorAll("#feed > li")].map((li) =>
      [li.dataset.kind, li.dataset.tx ?? null, li.querySelectorAll("li").length, li.querySelector("details")?.open ?? null]);
"""


def test_an_entry_drawn_before_its_last_events_grows_in_place_and_stays_open(server_factory, browser):
    server = server_factory().start()
    browser.get(server.url + "/healthz")
    run(browser, FEED_PAGE)
    grown = run(browser, """
        set("acct-1", 70, 1, "t1"); await frame();
        const first = entries();
        document.querySelector("#feed details").open = true; await frame();
        set("acct-2", 80, 2, "t1"); await frame();
        posted(3, "t1"); set("acct-3", 1, 4); await frame();
        return [first, entries(), document.querySelector("#feed summary").textContent];
    """)
    assert grown == [
        [["transaction", "t1", 1, False]],
        [["valueChanged", None, 0, None], ["transaction", "t1", 3, True]],
        "#1–#3transactiont1 3 events: valueChanged ×2, notificationPosted  (rev 9)",
    ]
    # An entry the filter hid shows once an event that matches it arrives, in its place.
    filtered = run(browser, """
        const kind = document.getElementById("k");
        kind.value = "notificationPosted"; kind.dispatchEvent(new Event("input")); await frame();
        set("acct-1", 60, 5, "t2"); await frame();
        const hidden = entries();
        posted(6, "t2"); set("acct-3", 2, 7); await frame();
        return [hidden, entries()];
    """)
    assert filtered == [
        [["transaction", "t1", 3, True]],
        [["transaction", "t2", 2, False], ["transaction", "t1", 3, True]],
    ]
