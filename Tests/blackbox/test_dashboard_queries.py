"""The dashboard's Objects table as a live query, and queries in the registration graph (chromium, real server)."""

from conftest import EventStreamReader
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select
from test_dashboard import attribute_values, click, created, fill, gone, open_dashboard, shown, wait


def rows(browser):
    """The ids of the Objects table's rows, in order."""
    return attribute_values(browser, "#objects-body tr", "data-object")


def dashboard_observer(server):
    """The page's own observer (named after its client, `dashboard-…`)."""
    observers = server.request("GET", "/v1/observers")[1]["observers"]
    mine = [o for o in observers if o["name"].startswith("dashboard-")]
    assert len(mine) == 1, observers
    return mine[0]["id"]


def accounts(server):
    server.request("PUT", "/v1/classes/Account", {"properties": {"balance": {"type": "number"}, "owner": {"type": "string"}}})
    server.request("PUT", "/v1/classes/Person", {"properties": {"name": {"type": "string"}}})
    for name, balance in [("a", 50), ("b", 150), ("c", 300), ("d", 120), ("e", 90), ("f", 700)]:
        created(server, "/v1/objects", {"id": f"acct-{name}", "class": "Account", "values": {"balance": balance, "owner": name}})
    created(server, "/v1/objects", {"id": "person-1", "class": "Person", "values": {"name": "Ada"}})


def test_the_objects_table_is_a_live_query_filtered_sorted_and_windowed(server_factory, browser):
    server = server_factory().start()
    accounts(server)
    open_dashboard(browser, server)
    # No filter: every object, by id.
    wait(browser).until(lambda b: rows(b) == ["acct-a", "acct-b", "acct-c", "acct-d", "acct-e", "acct-f", "person-1"])
    shown(browser, "#objects-total", "7 objects match")
    observer_id = dashboard_observer(server)
    first = server.request("GET", f"/v1/observers/{observer_id}/queries")[1]["queries"]
    assert len(first) == 1 and first[0].get("class") is None

    # Accounts with a balance of at least 100, shown as a column.
    form = browser.find_element(By.ID, "query-form")
    fill(form, "class", "Account")
    form.find_element(By.CSS_SELECTOR, ".add-condition").click()
    condition = form.find_element(By.CSS_SELECTOR, ".conditions li:last-child")
    fill(condition, "keyPath", "balance")
    Select(condition.find_element(By.NAME, "op")).select_by_value(">=")
    fill(condition, "operand", "100")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser).until(lambda b: rows(b) == ["acct-b", "acct-c", "acct-d", "acct-f"])
    shown(browser, "#objects-total", "4 objects match")
    shown(browser, 'tr[data-object="acct-c"] td[data-key-path="balance"]', "300")

    # Sort by the balance column's header: ascending, then descending.
    click(browser, 'th button[data-sort="balance"]')
    wait(browser).until(lambda b: rows(b) == ["acct-d", "acct-b", "acct-c", "acct-f"])
    click(browser, 'th button[data-sort="balance"]')
    wait(browser).until(lambda b: rows(b) == ["acct-f", "acct-c", "acct-b", "acct-d"])
    assert attribute_values(browser, 'th[aria-sort="descending"] button', "data-sort") == ["balance"]

    # Each new filter replaced the query: the observer holds only the last one.
    wait(browser).until(lambda b: len(server.request("GET", f"/v1/observers/{observer_id}/queries")[1]["queries"]) == 1)
    query = server.request("GET", f"/v1/observers/{observer_id}/queries")[1]["queries"][0]
    assert (query["class"], query["where"], query["orderBy"]) == ("Account", [["balance", ">=", 100]], [["balance", "desc"]])

    # Live: a row moves, one leaves, one enters; the total follows.
    server.request("PUT", "/v1/objects/acct-d/values/balance", {"value": 1000})
    wait(browser).until(lambda b: rows(b) == ["acct-d", "acct-f", "acct-c", "acct-b"])
    shown(browser, 'tr[data-object="acct-d"] td[data-key-path="balance"]', "1000")
    server.request("PUT", "/v1/objects/acct-c/values/balance", {"value": 10})
    wait(browser).until(lambda b: rows(b) == ["acct-d", "acct-f", "acct-b"])
    shown(browser, "#objects-total", "3 objects match")
    server.request("PATCH", "/v1/objects/acct-e", {"values": {"balance": 200}})
    wait(browser).until(lambda b: rows(b) == ["acct-d", "acct-f", "acct-e", "acct-b"])
    assert server.request("DELETE", "/v1/objects/acct-f")[0] == 204
    wait(browser).until(lambda b: rows(b) == ["acct-d", "acct-e", "acct-b"])

    # A window of two: the first two in order, and the total of all matches.
    limit = form.find_element(By.NAME, "limit")
    limit.clear()
    limit.send_keys("2\n")
    wait(browser).until(lambda b: rows(b) == ["acct-d", "acct-e"])
    shown(browser, "#objects-total", "3 objects match; the first 2 are shown")
    server.request("PUT", "/v1/objects/acct-b/values/balance", {"value": 5000})  # enters the window at the top
    wait(browser).until(lambda b: rows(b) == ["acct-b", "acct-d"])

    # A filter the server refuses is said, and the table keeps the last good query.
    condition = form.find_element(By.CSS_SELECTOR, ".conditions li:last-child")
    fill(condition, "keyPath", "balanse")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown(browser, "#query-form .result.error", "400")
    assert rows(browser) == ["acct-b", "acct-d"]
    fill(condition, "operand", "not json")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown(browser, "#query-form .result.error", "must be JSON")


def test_queries_appear_in_the_graph_as_edges_to_their_class(server_factory, browser):
    server = server_factory().start()
    accounts(server)
    mobile = created(server, "/v1/observers", {"name": "mobile", "lease": 600})
    before = created(server, f"/v1/observers/{mobile['id']}/queries",
                     {"class": "Person", "where": [["name", "prefix", "A"]], "select": ["name"]})["query"]
    open_dashboard(browser, server)
    # From the snapshot: the query registered before the page opened.
    edge = f'g.edge.query[data-query="{before["id"]}"][data-observer="{mobile["id"]}"][data-class="Person"]'
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, edge)))
    shown(browser, f"{edge} text", 'name prefix "A"')
    shown(browser, 'g.node.class[data-class="Person"]', "class Person")
    # The page's own query: to every object, no conditions.
    page_edge = f'g.edge.query[data-observer="{dashboard_observer(server)}"][data-class=""]'
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, page_edge)))
    shown(browser, f"{page_edge} text", "all")

    # From the admin stream: queryAdded draws it, queryRemoved takes it away.
    added = created(server, f"/v1/observers/{mobile['id']}/queries",
                    {"class": "Account", "where": [["balance", ">=", 100], ["owner", "in", ["b", "c"]]]})["query"]
    edge = f'g.edge.query[data-query="{added["id"]}"][data-class="Account"]'
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, edge)))
    shown(browser, f"{edge} text", 'balance >= 100, owner in ["b","c"]')
    shown(browser, f'#feed li[data-kind="queryAdded"]', added["id"])
    shown(browser, f'tr[data-observer="{mobile["id"]}"]', "2 queries")
    # A change to an object of the class lights the edge up.
    server.request("PUT", "/v1/objects/acct-b/values/balance", {"value": 151})
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, f'g.edge.query.flash[data-query="{added["id"]}"]')))
    assert server.request("DELETE", f"/v1/observers/{mobile['id']}/queries/{added['id']}")[0] == 204
    wait(browser).until(gone(By.CSS_SELECTOR, edge))
    shown(browser, '#feed li[data-kind="queryRemoved"]', "unobserved")
    # The observer's removal takes its queries' edges with it.
    stream = EventStreamReader(server, "/v1/events")
    try:
        assert server.request("DELETE", f"/v1/observers/{mobile['id']}")[0] == 204
        stream.wait_for(lambda event, _, data: event == "observerRemoved")
    finally:
        stream.close()
    wait(browser).until(gone(By.CSS_SELECTOR, f'g.edge[data-observer="{mobile["id"]}"]'))
    wait(browser).until(gone(By.CSS_SELECTOR, 'g.node.class[data-class="Person"]'))


def test_the_objects_query_is_made_again_when_the_server_loses_the_pages_observer(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "first"})
    open_dashboard(browser, server)
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-object="first"]')))
    # Deleted from elsewhere (as the page's own Delete button would): the page makes a new one.
    old = dashboard_observer(server)
    assert server.request("DELETE", f"/v1/observers/{old}")[0] == 204
    wait(browser, 10).until(lambda b: any(o["name"].startswith("dashboard-") and o["id"] != old
                                          for o in server.request("GET", "/v1/observers")[1]["observers"]))
    created(server, "/v1/objects", {"id": "second"})
    wait(browser, 10).until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-object="second"]')))
    shown(browser, "#query-form .result", "Live query")
    assert rows(browser) == ["first", "second"]
