"""The dashboard as a newcomer meets it (issue 47), in chromium at 1440, 1024 and 420 px wide: a 900 KB
value never makes the page scroll sideways, the Objects filter leaves one query however it is applied,
an unknown class keeps the last good window, Edit starts from a clean form, the feed's id filter is exact.

Each layout run saves a full-page screenshot to build/screenshots/dashboard-<width>.png.
"""

import base64
import time

import pytest
from conftest import ROOT
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from test_dashboard import attribute_values, click, created, open_dashboard, set_value, shown, wait

WIDTHS = [1440, 1024, 420]
BIG = "x" * 900_000  # under the 1 MiB body limit
SCREENSHOTS = ROOT / "build" / "screenshots"


@pytest.fixture(params=WIDTHS, ids=lambda width: f"{width}px")
def width(request, browser):
    """The page's viewport, exactly `width` CSS pixels wide (the browser is the session's: reset after)."""
    browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                            {"width": request.param, "height": 1000, "deviceScaleFactor": 1, "mobile": False})
    yield request.param
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def no_sideways_scroll(browser):
    scroll, inner, wide = browser.execute_script("""
        const wide = [...document.querySelectorAll('body *')]
          .filter((e) => e.getBoundingClientRect().right > innerWidth && e.getClientRects().length)
          .filter((e) => ![...e.children].some((c) => c.getBoundingClientRect().right > innerWidth))
          .slice(0, 5).map((e) => `${e.tagName}.${e.className} ${e.id} ${Math.round(e.getBoundingClientRect().right)}`);
        return [document.documentElement.scrollWidth, window.innerWidth, wide]""")
    assert scroll <= inner, f"the page is {scroll} px wide in a {inner} px window: {wide}"


def dashboard_observers(server):
    observers = server.request("GET", "/v1/observers")[1]["observers"]
    return [o["id"] for o in observers if o["name"].startswith("dashboard-")]


def queries_of(server, observer_id):
    return server.request("GET", f"/v1/observers/{observer_id}/queries")[1]["queries"]


def rows(browser):
    return attribute_values(browser, "#objects-body tr", "data-object")


def record_statuses(browser):
    """Keeps every text the Objects filter's status line shows from now on (window.statuses)."""
    browser.execute_script("""
        window.statuses = [];
        const line = document.querySelector('#query-form .result');
        new MutationObserver(() => window.statuses.push(line.textContent))
          .observe(line, { childList: true, characterData: true, subtree: true });""")


def holds(predicate, seconds, state=lambda: None):
    """`predicate` stays true for `seconds` (checked every 50 ms): a state that must last, not just occur.
    `state()` says what was seen when it does not."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), state()
        time.sleep(0.05)


def save_full_page(browser, path):
    width, height = browser.execute_script(
        "return [Math.max(innerWidth, document.documentElement.scrollWidth), document.documentElement.scrollHeight]")
    shot = browser.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(base64.b64decode(shot["data"]))


def rect(browser, selector):
    return browser.execute_script(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}",
        selector)


def test_a_900_kb_value_never_widens_the_page_and_the_layout_holds(server_factory, browser, width):
    server = server_factory().start()
    server.request("PUT", "/v1/classes/Employee", {"properties": {"name": {"type": "string"}, "bio": {"type": "string"}}})
    for n in [1, 2, 10, 11, 3]:
        created(server, "/v1/objects", {"id": f"emp-{n}", "class": "Employee", "values": {"name": f"E{n}"}})
    created(server, "/v1/objects", {"id": "alice-1", "class": "Employee", "values": {"name": "Alice", "bio": BIG}})
    mobile = created(server, "/v1/observers", {"name": "mobile", "lease": 600})
    created(server, f"/v1/observers/{mobile['id']}/observations", {"object": "emp-1", "keyPath": "name"})
    created(server, f"/v1/observers/{mobile['id']}/subscriptions", {"name": "ping"})
    created(server, f"/v1/observers/{mobile['id']}/queries", {"class": "Employee", "limit": 5})
    open_dashboard(browser, server)
    shown(browser, 'tr[data-object="alice-1"]', "bio:")
    shown(browser, f'#observers-body tr[data-observer="{mobile["id"]}"]', "1 query")
    no_sideways_scroll(browser)

    # The long value is cut in the table, and shown whole on demand.
    cell = browser.find_element(By.CSS_SELECTOR, 'tr[data-object="alice-1"] li[data-key-path="bio"]')
    assert len(cell.text) < 120, len(cell.text)
    click(browser, 'tr[data-object="alice-1"] li[data-key-path="bio"] button.show-all')
    wait(browser).until(lambda b: b.execute_script("return document.querySelector('dialog.value-dialog')?.open === true"))
    assert browser.execute_script("return document.querySelector('dialog.value-dialog textarea').value.length") == len(BIG) + 2
    no_sideways_scroll(browser)
    click(browser, "dialog.value-dialog button")
    wait(browser).until(lambda b: b.execute_script("return !document.querySelector('dialog.value-dialog').open"))

    # Ids, classes and Edit buttons in the Objects table are one line each.
    for selector in ["#objects-body td.id", "#objects-body td:nth-child(2)", "#objects-body td:last-child button"]:
        lines = browser.execute_script("""
            return [...document.querySelectorAll(arguments[0])].map((e) => {
              const range = document.createRange();
              range.selectNodeContents(e.firstChild);
              return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size;
            })""", selector)
        assert lines and max(lines) == 1, (selector, lines)

    # The Observers panel's buttons are inside the window; an id is never broken inside a word.
    for button in browser.find_elements(By.CSS_SELECTOR, "#observers-body button"):
        box = browser.execute_script("const r = arguments[0].getBoundingClientRect(); return [r.left, r.right]", button)
        assert 0 <= box[0] and box[1] <= width, box
    for strong in browser.find_elements(By.CSS_SELECTOR, "#observers-body td.who strong"):
        assert browser.execute_script("return arguments[0].getClientRects().length", strong) == 1

    # "1 obs · 1 subs · 1 query" is one line.
    summary = f'#observers-body tr[data-observer="{mobile["id"]}"] td.registrations summary'
    assert rect(browser, summary)["height"] < 30, rect(browser, summary)

    # The `prior` option stays inside its form.
    prior = browser.find_element(By.CSS_SELECTOR, '#create-observer-form input[value="prior"]')
    label = browser.execute_script("return arguments[0].closest('label').getBoundingClientRect().right", prior)
    form = rect(browser, "#create-observer-form")
    assert label <= form["right"], (label, form)

    # The graph: drawn at its shown width (not scaled, no blank band); notification names before the
    # objects and inside the visible area; objects in natural order.
    graph = browser.execute_script("""
        const svg = document.getElementById('graph');
        return {shown: svg.getBoundingClientRect().width, drawn: svg.viewBox.baseVal.width,
                height: svg.getBoundingClientRect().height, drawnHeight: svg.viewBox.baseVal.height,
                box: svg.parentElement.clientHeight}""")
    assert abs(graph["shown"] - graph["drawn"]) <= 3, graph
    assert abs(graph["height"] - graph["drawnHeight"]) <= 2, graph
    objects = attribute_values(browser, "g.node.object", "data-object")
    assert objects == ["alice-1", "emp-1", "emp-2", "emp-3", "emp-10", "emp-11"], objects
    ping = browser.execute_script(
        "return document.querySelector('g.node.notification rect').y.baseVal.value")
    first_object = browser.execute_script("return document.querySelector('g.node.object rect').y.baseVal.value")
    assert ping < first_object and ping < graph["box"], (ping, first_object, graph)

    # A favicon, so no page load logs a 404.
    assert browser.execute_script(
        "return fetch(document.querySelector('link[rel=icon]').href).then((r) => r.status)") == 200
    favicon_404 = [e for e in browser.get_log("browser") if "favicon" in e["message"]]
    assert not favicon_404, favicon_404

    no_sideways_scroll(browser)
    save_full_page(browser, SCREENSHOTS / f"dashboard-{width}.png")


def type_class(form, keys):
    """Types over the Objects filter's class field, as a person does (clear() would apply an empty class)."""
    field = form.find_element(By.NAME, "class")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(keys)


def accounts(server):
    server.request("PUT", "/v1/classes/Account", {"properties": {"balance": {"type": "number"}}})
    server.request("PUT", "/v1/classes/Person", {"properties": {"name": {"type": "string"}}})
    for name, balance in [("a", 50), ("b", 150)]:
        created(server, "/v1/objects", {"id": f"acct-{name}", "class": "Account", "values": {"balance": balance}})
    created(server, "/v1/objects", {"id": "person-1", "class": "Person", "values": {"name": "Ada"}})


def test_enter_apply_and_tab_on_the_objects_filter_each_leave_exactly_one_query(server_factory, browser, width):
    server = server_factory().start()
    accounts(server)
    open_dashboard(browser, server)
    wait(browser).until(lambda b: rows(b) == ["acct-a", "acct-b", "person-1"])
    [observer] = dashboard_observers(server)
    record_statuses(browser)
    form = browser.find_element(By.ID, "query-form")
    expected = {"Account": ["acct-a", "acct-b"], "Person": ["person-1"]}
    for how, class_name in [("Enter", "Account"), ("Apply", "Person"), ("Tab", "Account")]:
        type_class(form, class_name + {"Enter": Keys.ENTER, "Apply": "", "Tab": Keys.TAB}[how])
        if how == "Apply":
            click(browser, "#query-form button[type=submit]")
        wait(browser).until(lambda b: rows(b) == expected[class_name], f"{how}: {rows(browser)}")
        wait(browser).until(lambda b: [q.get("class") for q in queries_of(server, observer)] == [class_name],
                            f"{how}: {queries_of(server, observer)}")
        # Longer than the page's 2 s retry: the one query stays, nothing was removed under it.
        holds(lambda: [q.get("class") for q in queries_of(server, observer)] == [class_name], 2.5,
              lambda: queries_of(server, observer))
        assert dashboard_observers(server) == [observer]
        edges = attribute_values(browser, f'g.edge.query[data-observer="{observer}"]', "data-class")
        assert edges == [class_name], (how, edges)
        shown(browser, "#query-form .result", "Live query")
    statuses = browser.execute_script("return window.statuses")
    assert not [s for s in statuses if "trying again" in s or "removed" in s], statuses
    no_sideways_scroll(browser)


def test_an_unknown_class_keeps_the_last_good_window_and_makes_no_observer(server_factory, browser, width):
    server = server_factory().start()
    accounts(server)
    open_dashboard(browser, server)
    form = browser.find_element(By.ID, "query-form")
    form.find_element(By.NAME, "class").send_keys("Account\n")
    wait(browser).until(lambda b: rows(b) == ["acct-a", "acct-b"])
    [observer] = dashboard_observers(server)
    wait(browser).until(lambda b: len(queries_of(server, observer)) == 1)
    for keys in [Keys.TAB, Keys.ENTER]:
        type_class(form, "Nope" + keys)
        shown(browser, "#query-form .result.error", "no class 'Nope'")
        shown(browser, "#query-form .result.error", "the last filter that worked")
    click(browser, "#query-form button[type=submit]")  # Apply, a third time
    # Longer than the page's 2 s retry: no new observer, the Account query stays, nothing retried.
    holds(lambda: dashboard_observers(server) == [observer]
          and [q.get("class") for q in queries_of(server, observer)] == ["Account"], 3,
          lambda: (dashboard_observers(server), queries_of(server, observer)))
    assert "trying again" not in browser.find_element(By.CSS_SELECTOR, "#query-form .result").text
    # The last good window is still live.
    assert rows(browser) == ["acct-a", "acct-b"]
    created(server, "/v1/objects", {"id": "acct-c", "class": "Account", "values": {"balance": 1}})
    wait(browser).until(lambda b: rows(b) == ["acct-a", "acct-b", "acct-c"])
    no_sideways_scroll(browser)


def test_edit_starts_from_the_rows_object_alone(server_factory, browser, width):
    server = server_factory().start()
    accounts(server)
    open_dashboard(browser, server)
    form = set_value(browser, "acct-a", "balance", "7")
    shown(browser, "#object-form .result.ok", "acct-a.balance set")
    click(browser, 'button[aria-label="Edit acct-b"]')
    values = browser.execute_script(
        "const f = document.getElementById('object-form').elements;"
        "return [f.object.value, f.keyPath.value, f.value.value, document.activeElement === f.keyPath]")
    assert values == ["acct-b", "", "", True], values
    form.find_element(By.CSS_SELECTOR, 'button[value="set"]').click()  # nothing filled in: nothing written
    shown(browser, "#object-form .result.error", "Please give a key path")
    assert server.request("GET", "/v1/objects/acct-b/values/balance")[1]["value"] == 150
    no_sideways_scroll(browser)


def test_the_feeds_object_filter_matches_the_id_exactly_or_a_prefix_with_a_star(server_factory, browser, width):
    server = server_factory().start()
    open_dashboard(browser, server)
    for n in [1, 10, 11, 2]:
        created(server, "/v1/objects", {"id": f"emp-{n}"})
    shown(browser, '#feed li[data-object="emp-2"]', "objectCreated")
    field = browser.find_element(By.ID, "feed-object")
    field.send_keys("emp-1")
    wait(browser).until(lambda b: attribute_values(b, "#feed li", "data-object") == ["emp-1"])
    server.request("PUT", "/v1/objects/emp-10/values/x", {"value": 1})
    server.request("PUT", "/v1/objects/emp-1/values/x", {"value": 1})
    wait(browser).until(lambda b: attribute_values(b, "#feed li", "data-object") == ["emp-1", "emp-1"])
    field.send_keys("*")
    wait(browser).until(lambda b: attribute_values(b, "#feed li", "data-object")
                        == ["emp-1", "emp-10", "emp-11", "emp-10", "emp-1"])
    no_sideways_scroll(browser)
