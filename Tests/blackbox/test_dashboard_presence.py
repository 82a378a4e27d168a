"""Owned objects and presence (contract 14) in the dashboard (chromium, real server): an owned object is shown
under its observer and marked with its owner in the Objects table; the Presence view lists a room's members
live (a query), with the head count, as members join, are removed and their leases run out.
"""

import time

from selenium.webdriver.common.by import By
from test_dashboard import attribute_values, created, fill, open_dashboard, shown, wait


def member(server, user, room="r1", lease=60):
    """An observer (no stream: its lease counts) owning one presence object; returns (observer id, object id)."""
    observer = created(server, "/v1/observers", {"lease": lease})
    presence = created(server, "/v1/objects", {"class": "Presence", "values": {"room": room, "user": user, "status": "here"},
                                               "owner": observer["id"]})
    return observer["id"], presence["id"]


def listed(browser):
    """The Presence view's members, in order: (owner, object id), as `member` gives them."""
    ids = attribute_values(browser, "#presence-members li", "data-object")
    owners = attribute_values(browser, "#presence-members li", "data-owner")
    return list(zip(owners, ids))


def head_count(browser):
    return browser.find_element(By.ID, "presence-count").get_attribute("data-total")


def test_owned_objects_under_their_owner_and_a_live_presence_view(server_factory, browser):
    server = server_factory().start()
    status, answer = server.request("PUT", "/v1/classes/Presence", {"properties": {
        "room": {"type": "string"}, "user": {"type": "string"}, "status": {"type": "string"}}})
    assert status == 201, answer
    bob = member(server, "bob")
    alice = member(server, "alice")
    member(server, "carol", room="r2")
    open_dashboard(browser, server)

    # Under its owner in the Observers table, and marked with it in the Objects table.
    shown(browser, f'#observers-body tr[data-observer="{alice[0]}"] .owns', f"owns {alice[1]} (Presence)")
    wait(browser).until(lambda b: attribute_values(b, f'#objects-body tr[data-object="{alice[1]}"]', "data-owner") == [alice[0]])
    shown(browser, f'#objects-body tr[data-object="{alice[1]}"] .owner', alice[0])

    # The room r1: alice and bob, ordered by user, each with its owner.
    form = browser.find_element(By.ID, "presence-form")
    fill(form, "room", "r1")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    wait(browser).until(lambda b: listed(b) == [alice, bob])
    assert head_count(browser) == "2"
    shown(browser, "#presence-count", "2 members in Presence room == \"r1\"")
    shown(browser, f'#presence-members li[data-object="{alice[1]}"]', "alice status: \"here\"")

    # A join is an insertion; a removed observer takes its presence object (and the list entry) with it.
    dave = member(server, "dave", lease=2)
    wait(browser).until(lambda b: listed(b) == [alice, bob, dave] and head_count(b) == "3")
    assert server.request("DELETE", f"/v1/observers/{alice[0]}")[0] == 204
    wait(browser).until(lambda b: listed(b) == [bob, dave] and head_count(b) == "2")
    wait(browser).until(lambda b: not b.find_elements(By.CSS_SELECTOR, f'#objects-body tr[data-object="{alice[1]}"]'))

    # dave has no stream: the list says his lease is running, and he leaves when it runs out.
    shown(browser, f'#presence-members li[data-object="{dave[1]}"]', "leaves when its lease runs out")
    began = time.monotonic()
    wait(browser, 6).until(lambda b: listed(b) == [bob] and head_count(b) == "1")
    assert time.monotonic() - began <= 2 + 2
    shown(browser, "#presence-count", "1 member in")

    # An unknown class or room key is said, not retried.
    fill(form, "class", "Nothing")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown(browser, "#presence-form .result", "404 notFound")
    fill(form, "class", "Presence")
    fill(form, "key", "floor")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown(browser, "#presence-form .result", "class Presence has no key 'floor'")
