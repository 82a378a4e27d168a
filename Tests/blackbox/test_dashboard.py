"""The dashboard in a real browser (headless Debian chromium through selenium), against the real server.

Every check goes through the page itself: what it shows, and what its forms do.
"""

import threading
import time

import pytest
from conftest import ROOT, EventStreamReader
from selenium.common.exceptions import (
    ElementClickInterceptedException,
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait



def wait(browser, timeout=5):
    return WebDriverWait(browser, timeout, poll_frequency=0.02)


def open_dashboard(browser, server):
    """Opens the page and waits until its admin stream is live and its first snapshot is in."""
    browser.get(server.url + "/")
    # 20 s: a page's first load under `make test`'s parallel load (ThreadSanitizer's run beside two
    # browser workers on two cores) once took over 10 s to go live; loaded alone it takes well under 1.
    wait(browser, 20).until(EC.text_to_be_present_in_element((By.ID, "connection"), "live"))
    wait(browser, 20).until(EC.text_to_be_present_in_element_attribute((By.ID, "dashboard"), "aria-busy", "false"))


def shown(browser, selector, text, timeout=5):
    """Waits until the first element matching `selector` shows `text` (found afresh each time:
    the page redraws elements, so a kept reference can go stale)."""
    wait(browser, timeout).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, selector), text))


def click(browser, selector, timeout=5):
    """Clicks the first element matching `selector` once it is shown, finding it afresh on every
    try: the page redraws rows, so an element found a moment ago may be stale (retried, not an error)."""
    def attempt(b):
        try:
            element = b.find_element(By.CSS_SELECTOR, selector)
            if not (element.is_displayed() and element.is_enabled()):
                return False
            element.click()
            return True
        except (NoSuchElementException, StaleElementReferenceException, ElementClickInterceptedException):
            return False
    wait(browser, timeout).until(attempt, f"nothing clickable matches {selector}")


def attribute_values(browser, selector, name):
    """The attribute `name` of every element matching `selector`, read in one go in the page
    (no element references that a redraw could make stale)."""
    return browser.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map((element) => element.getAttribute(arguments[1]))",
        selector, name)


def gone(by, selector):
    """A wait condition: no element matches (the page may redraw the old one meanwhile)."""
    return lambda browser: not browser.find_elements(by, selector)


def created(server, path, body, expected=201):
    status, answer = server.request("POST", path, body)
    assert status == expected, answer
    return answer


def fill(form, name, text):
    field = form.find_element(By.NAME, name)
    field.clear()
    field.send_keys(text)


def set_value(browser, object_id, key_path, value):
    """Sets a value through the page's "Change an object" form; returns the form."""
    form = browser.find_element(By.ID, "object-form")
    fill(form, "object", object_id)
    fill(form, "keyPath", key_path)
    fill(form, "value", value)
    form.find_element(By.CSS_SELECTOR, 'button[value="set"]').click()
    return form


def test_object_created_over_the_api_appears_within_one_second(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "p1"})
    open_dashboard(browser, server)
    started = time.monotonic()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 100, "owner": {"$ref": "p1"}}})
    wait(browser, 1).until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-object="acct-1"]')))
    assert time.monotonic() - started < 1.0
    shown(browser, 'tr[data-object="acct-1"]', "balance: 100")
    shown(browser, 'tr[data-object="acct-1"]', "→ p1")
    shown(browser, "#count-objects", "2")


def test_registrations_by_another_client_appear_and_disappear_as_edges(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 1}})
    observer = created(server, "/v1/observers", {"name": "mobile"})
    open_dashboard(browser, server)

    observation = created(
        server, f"/v1/observers/{observer['id']}/observations",
        {"object": "acct-1", "keyPath": "balance", "options": ["new", "old"]},
    )["observations"][0]
    edge = f'g.edge[data-registration="{observation["id"]}"][data-observer="{observer["id"]}"][data-object="acct-1"]'
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, edge)))
    shown(browser, f"{edge} text", "balance [new,old]")

    subscription = created(server, f"/v1/observers/{observer['id']}/subscriptions", {"name": "UserDidLogin"})
    wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, f'g.edge[data-subscription="{subscription["id"]}"]')))
    shown(browser, "g.node.notification", "UserDidLogin")

    # A change along the edge lights it up briefly.
    server.request("PUT", "/v1/objects/acct-1/values/balance", {"value": 2})
    wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, f'g.edge.flash[data-registration="{observation["id"]}"]')))

    status, _ = server.request("DELETE", f"/v1/observers/{observer['id']}/observations/{observation['id']}")
    assert status == 204
    wait(browser).until(gone(By.CSS_SELECTOR, f'g.edge[data-registration="{observation["id"]}"]'))

    # Deleting the object removes the edges of its observations too (6.4).
    again = created(server, f"/v1/observers/{observer['id']}/observations", {"object": "acct-1", "keyPath": "balance"})
    selector = f'g.edge[data-registration="{again["observations"][0]["id"]}"]'
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, selector)))
    assert server.request("DELETE", "/v1/objects/acct-1")[0] == 204
    wait(browser).until(gone(By.CSS_SELECTOR, selector))
    wait(browser).until(gone(By.CSS_SELECTOR, 'tr[data-object="acct-1"]'))


def test_value_set_from_the_page_reaches_the_clients_stream_and_the_feed(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 1, "tags": ["a"]}})
    observer = created(server, "/v1/observers", {"name": "client"})
    created(server, f"/v1/observers/{observer['id']}/observations",
            {"object": "acct-1", "keyPaths": ["balance", "tags"], "options": ["new", "old"]})
    stream = EventStreamReader(server, f"/v1/observers/{observer['id']}/events")
    try:
        open_dashboard(browser, server)
        click(browser, 'tr[data-object="acct-1"] button')
        form = browser.find_element(By.ID, "object-form")
        assert form.find_element(By.NAME, "object").get_attribute("value") == "acct-1"
        fill(form, "keyPath", "balance")
        fill(form, "value", "42")
        form.find_element(By.CSS_SELECTOR, 'button[value="set"]').click()

        _, _, record = stream.wait_for(lambda event, _, data: event == "change" and data["keyPath"] == "balance")
        assert (record["old"], record["new"], record["kind"]) == (1, 42, "setting")
        wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#object-form .result"), "revision"))
        shown(browser, '#feed li[data-kind="valueChanged"][data-object="acct-1"]', "acct-1.balance = 42")
        wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, 'tr[data-object="acct-1"]'), "balance: 42"))

        # A to-many mutation from the page arrives as an insertion record.
        fill(form, "keyPath", "tags")
        fill(form, "indexes", "1")
        fill(form, "values", '["b"]')
        form.find_element(By.CSS_SELECTOR, 'button[value="mutate"]').click()
        _, _, record = stream.wait_for(lambda event, _, data: event == "change" and data["keyPath"] == "tags")
        assert (record["kind"], record["indexes"], record["new"]) == ("insertion", [1], ["b"])

        # The feed filters by kind and object.
        kind = browser.find_element(By.ID, "feed-kind")
        kind.send_keys("observationAdded")
        wait(browser).until(lambda b: set(attribute_values(b, "#feed li", "data-kind")) == {"observationAdded"})
    finally:
        stream.close()


def test_the_page_shows_api_errors_as_readable_messages(server_factory, browser):
    server = server_factory().start()
    server.request("PUT", "/v1/classes/Account", {"properties": {"balance": {"type": "number"}}})
    created(server, "/v1/objects", {"id": "acct-1", "class": "Account", "values": {"balance": 1}})
    open_dashboard(browser, server)
    form = set_value(browser, "acct-1", "balnce", "2")
    result = form.find_element(By.CLASS_NAME, "result")
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#object-form .result"), "unknownKeyPath"))
    assert "400" in result.text and "did you mean 'balance'" in result.text
    assert "error" in result.get_attribute("class")

    fill(form, "value", "not json")
    form.find_element(By.CSS_SELECTOR, 'button[value="set"]').click()
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#object-form .result"), "must be JSON"))
    assert server.request("GET", "/v1/objects/acct-1")[1]["values"] == {"balance": 1}


def test_forms_create_an_observer_with_a_registration_and_post_a_notification(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 1}})
    open_dashboard(browser, server)
    form = browser.find_element(By.ID, "create-observer-form")
    fill(form, "name", "from-page")
    fill(form, "object", "acct-1")
    fill(form, "keyPaths", "balance")
    fill(form, "subscribe", "Ping")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#create-observer-form .result"), "subscribed"))
    # The page's own observer (its Objects query) is listed too: the new one is found by name.
    observer = next(o for o in server.request("GET", "/v1/observers")[1]["observers"] if o["name"] == "from-page")
    assert observer["observations"] == 1 and observer["subscriptions"] == 1
    wait(browser).until(EC.presence_of_element_located(
        (By.CSS_SELECTOR, f'g.edge.observation[data-observer="{observer["id"]}"]')))

    # Watch the observer's own stream from its row, then post from the page.
    click(browser, f'tr[data-observer="{observer["id"]}"] button')
    post = browser.find_element(By.ID, "post-form")
    fill(post, "name", "Ping")
    fill(post, "userInfo", '{"n": 1}')
    post.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser).until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, "#post-form .result"), "delivered to 1"))
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "watch-list"), 'Ping from — {"n":1}'))
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, '#feed li[data-kind="notificationPosted"]')))


def test_an_observer_whose_lease_expires_disappears(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1"})
    observer = created(server, "/v1/observers", {"name": "short-lived", "lease": 2})
    created(server, f"/v1/observers/{observer['id']}/observations", {"object": "acct-1", "keyPath": "balance"})
    open_dashboard(browser, server)
    row = (By.CSS_SELECTOR, f'tr[data-observer="{observer["id"]}"]')
    wait(browser).until(EC.presence_of_element_located(row))
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, f'g.edge[data-observer="{observer["id"]}"]')))
    wait(browser, 6).until(gone(*row))
    assert not browser.find_elements(By.CSS_SELECTOR, f'g[data-observer="{observer["id"]}"]')
    shown(browser, '#feed li[data-kind="observerRemoved"]', "expired")


def test_token_flow(server_factory, browser):
    server = server_factory(token="s3cret-token").start()
    browser.get(server.url + "/")
    panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "token-panel")))
    assert "401" in panel.text
    assert not browser.find_element(By.ID, "dashboard").is_displayed()

    token = browser.find_element(By.ID, "token-input")
    token.send_keys("wrong")
    token.submit()
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "token-message"), "did not accept"))

    # An observer's token is valid but not enough: 403, said so.
    observer = created(server, "/v1/observers", {"name": "client"})
    token = browser.find_element(By.ID, "token-input")
    token.send_keys(observer["token"])
    token.submit()
    wait(browser).until(EC.text_to_be_present_in_element((By.ID, "token-message"), "403"))

    token = browser.find_element(By.ID, "token-input")
    token.send_keys("s3cret-token")
    token.submit()
    wait(browser, 10).until(EC.text_to_be_present_in_element((By.ID, "connection"), "live"))
    created(server, "/v1/objects", {"id": "seen-with-token"})
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-object="seen-with-token"]')))
    assert browser.execute_script("return sessionStorage.getItem('obs-server.token')") == "s3cret-token"

    # Kept for the tab: a reload needs no new prompt.
    open_dashboard(browser, server)
    assert not browser.find_element(By.ID, "token-panel").is_displayed()
    browser.find_element(By.ID, "forget-token").click()
    wait(browser).until(EC.visibility_of_element_located((By.ID, "token-panel")))
    assert browser.execute_script("return sessionStorage.getItem('obs-server.token')") is None


def test_the_admin_stream_resumes_after_a_server_restart(server_factory, browser, tmp_path):
    server = server_factory(data_dir=tmp_path / "data").start()
    created(server, "/v1/objects", {"id": "before"})
    open_dashboard(browser, server)
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-object="before"]')))
    server.stop()
    wait(browser, 10).until_not(EC.text_to_be_present_in_element((By.ID, "connection"), "live"))
    server.start()
    wait(browser, 15).until(EC.text_to_be_present_in_element((By.ID, "connection"), "live"))
    created(server, "/v1/objects", {"id": "after"})
    wait(browser, 5).until(EC.presence_of_element_located((By.CSS_SELECTOR, 'tr[data-object="after"]')))
    assert browser.find_elements(By.CSS_SELECTOR, 'tr[data-object="before"]')


def test_the_page_stays_responsive_with_1000_objects_and_200_events_per_second(server_factory, browser):
    server = server_factory().start()
    connection = server.connection()
    for index in range(1000):
        server.request("POST", "/v1/objects", {"id": f"o{index:04}", "values": {"n": 0}}, connection=connection)
    connection.close()
    observer = created(server, "/v1/observers", {"name": "load"})
    created(server, f"/v1/observers/{observer['id']}/observations",
            {"object": "o0000", "keyPath": "n", "options": ["new"]})
    open_dashboard(browser, server)
    wait(browser, 10).until(EC.text_to_be_present_in_element((By.ID, "count-objects"), "1000"))

    stop = threading.Event()
    sent = []

    def writer():
        writes = server.connection()
        started = time.monotonic()
        while not stop.is_set():
            count = len(sent)
            server.request("PUT", f"/v1/objects/o{count % 1000:04}/values/n", {"value": count}, connection=writes)
            sent.append(count)
            pause = started + len(sent) / 200 - time.monotonic()
            if pause > 0:
                time.sleep(pause)
        writes.close()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        # The longest gap between animation frames over 3 s, measured in the page.
        longest = browser.execute_async_script("""
            const done = arguments[arguments.length - 1];
            let last = performance.now(), longest = 0;
            const end = last + 3000;
            function frame(now) {
              longest = Math.max(longest, now - last);
              last = now;
              if (now < end) requestAnimationFrame(frame); else done(longest);
            }
            requestAnimationFrame(frame);
        """)
    finally:
        stop.set()
        thread.join(timeout=5)
    assert len(sent) >= 400, f"the writer managed only {len(sent)} writes"
    assert longest < 250, f"a frame took {longest:.0f} ms"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#objects-body tr")) <= 200
    assert len(browser.find_elements(By.CSS_SELECTOR, "#feed li")) <= 300
    last = sent[-1]
    wait(browser).until(EC.text_to_be_present_in_element(
        (By.CSS_SELECTOR, '#feed li[data-kind="valueChanged"]'), f"= {last}"))


def test_populated_dashboard_screenshot(server_factory, browser):
    """Fills a small, realistic graph and saves build/dashboard.png (the README's picture is a copy)."""
    server = server_factory().start()
    server.request("PUT", "/v1/classes/Person", {"properties": {
        "firstName": {"type": "string"}, "lastName": {"type": "string"},
        "fullName": {"type": "string", "computed": "{firstName} {lastName}", "dependsOn": ["firstName", "lastName"]}}})
    server.request("PUT", "/v1/classes/Account", {"properties": {
        "balance": {"type": "number"}, "owner": {"type": "ref", "class": "Person"}, "tags": {"type": "array"}}})
    created(server, "/v1/objects", {"id": "alice", "class": "Person", "values": {"firstName": "Alice", "lastName": "Liddell"}})
    for index in range(3):
        created(server, "/v1/objects", {"id": f"acct-{index}", "class": "Account",
                                        "values": {"balance": 100 * index, "owner": {"$ref": "alice"}, "tags": ["gold"]}})
    mobile = created(server, "/v1/observers", {"name": "mobile-app", "lease": 600})
    web = created(server, "/v1/observers", {"name": "web-client", "lease": 600})
    audit = created(server, "/v1/observers", {"name": "audit", "lease": 600, "retainObserved": True})
    created(server, f"/v1/observers/{mobile['id']}/observations",
            {"object": "acct-0", "keyPaths": ["balance", "owner.fullName"], "options": ["new", "old"]})
    created(server, f"/v1/observers/{web['id']}/observations",
            {"object": "acct-1", "keyPath": "balance", "options": ["new", "initial"]})
    created(server, f"/v1/observers/{web['id']}/observations", {"object": "alice", "keyPath": "fullName", "options": ["new"]})
    created(server, f"/v1/observers/{audit['id']}/observations",
            {"object": "acct-2", "keyPath": "tags", "options": ["new", "old", "prior"]})
    created(server, f"/v1/observers/{audit['id']}/subscriptions", {"name": "UserDidLogin"})
    created(server, f"/v1/observers/{web['id']}/queries",
            {"class": "Account", "where": [["balance", ">=", 100]], "orderBy": [["balance", "desc"]], "select": ["balance"]})
    open_dashboard(browser, server)
    for value in range(5):
        server.request("PUT", "/v1/objects/acct-0/values/balance", {"value": 1000 + value})
        time.sleep(0.1)
    server.request("POST", "/v1/notifications", {"name": "UserDidLogin", "object": "alice"})
    # Six observations and subscriptions, web-client's query, and the page's own query (its Objects table).
    wait(browser).until(lambda b: len(b.find_elements(By.CSS_SELECTOR, "g.edge")) == 8)
    time.sleep(1.1)  # one poll of /v1/stats, one second of the events/s sparkline
    server.request("PUT", "/v1/objects/acct-0/values/balance", {"value": 2024})
    time.sleep(0.1)
    (ROOT / "build").mkdir(exist_ok=True)
    browser.save_screenshot(str(ROOT / "build" / "dashboard.png"))


def test_accessibility_basics(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 1}})
    observer = created(server, "/v1/observers", {"name": "keyboard"})
    open_dashboard(browser, server)
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr[data-observer="{observer["id"]}"]')))
    unlabelled = browser.execute_script("""
        return [...document.querySelectorAll('input, select, textarea')]
          .filter((control) => control.labels.length === 0 && !control.getAttribute('aria-label'))
          .map((control) => control.id || control.name);
    """)
    assert unlabelled == []
    nameless = browser.execute_script("""
        return [...document.querySelectorAll('button')]
          .filter((button) => !(button.getAttribute('aria-label') || button.textContent.trim()))
          .map((button) => button.outerHTML);
    """)
    assert nameless == []

    # The observers' figures refresh every second without taking the focus from a row's button.
    watch = browser.find_element(By.CSS_SELECTOR, f'tr[data-observer="{observer["id"]}"] button')
    browser.execute_script("arguments[0].focus()", watch)
    time.sleep(2.2)
    assert browser.execute_script("return document.activeElement.getAttribute('aria-label')") == \
        "Watch the stream of keyboard"

    # Keyboard only: Enter on the focused button opens the observer's stream.
    browser.switch_to.active_element.send_keys("\n")
    wait(browser).until(EC.visibility_of_element_located((By.ID, "watch-panel")))
    assert browser.switch_to.active_element.get_attribute("id") == "watch-close"


def test_deleting_from_the_page_asks_first(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "keep"})
    created(server, "/v1/objects", {"id": "drop"})
    observer = created(server, "/v1/observers", {"name": "doomed"})
    open_dashboard(browser, server)
    form = browser.find_element(By.ID, "object-form")
    fill(form, "object", "keep")
    form.find_element(By.CSS_SELECTOR, 'button[value="delete"]').click()
    wait(browser).until(EC.alert_is_present()).dismiss()
    shown(browser, "#object-form .result", "not deleted")
    assert server.request("GET", "/v1/objects/keep")[0] == 200

    fill(form, "object", "drop")
    form.find_element(By.CSS_SELECTOR, 'button[value="delete"]').click()
    wait(browser).until(EC.alert_is_present()).accept()
    shown(browser, "#object-form .result", "drop deleted")
    wait(browser).until(gone(By.CSS_SELECTOR, 'tr[data-object="drop"]'))

    click(browser, f'tr[data-observer="{observer["id"]}"] button.danger')
    wait(browser).until(EC.alert_is_present()).accept()
    wait(browser).until(gone(By.CSS_SELECTOR, f'tr[data-observer="{observer["id"]}"]'))
    assert server.request("GET", f"/v1/observers/{observer['id']}")[0] == 404


def test_the_feed_pauses_and_catches_up(server_factory, browser):
    server = server_factory().start()
    created(server, "/v1/objects", {"id": "acct-1", "values": {"n": 0}})
    open_dashboard(browser, server)
    pause = browser.find_element(By.ID, "feed-pause")
    pause.click()
    assert pause.get_attribute("aria-pressed") == "true"
    server.request("PUT", "/v1/objects/acct-1/values/n", {"value": 7})
    shown(browser, 'tr[data-object="acct-1"]', "n: 7")  # the other views stay live
    assert not browser.find_elements(By.CSS_SELECTOR, '#feed li[data-kind="valueChanged"]')
    pause.click()
    shown(browser, '#feed li[data-kind="valueChanged"]', "acct-1.n = 7")
