"""Presence (contract 14) with the JavaScript client (`obs.presence`, /client/presence.js) in chromium, against
the real server: two tabs join a room and each sees both; closing a tab removes it from the other's list
within the lease + 2 s; reloading a tab never makes it leave (it goes on with the same observer, kept in
the tab's sessionStorage); with `beacon: true` a closed tab leaves at once.

The pages are a real HTML page (a reload must run it again), served from a copy of Public/ with it added;
the README's "Presence in ten lines" page is served and run the same way.
"""

import re
import shutil
import time
from urllib.parse import urlencode

from conftest import ROOT, EventStreamReader
from test_client import until

ADMIN = "admin-token"
LEASE = 10  # the client's default

PAGE = """<!doctype html>
<title>presence</title>
<script type="module">
  import { ObsClient } from "/client/obs.js";
  const params = new URLSearchParams(location.search);
  // Every list this page was shown: [ms since the epoch, total, users].
  window.seen = [];
  const client = new ObsClient({ token: params.get("token"), name: params.get("user") });
  window.room = await client.presence("r1", { status: "here" }, {
    beacon: params.get("beacon") === "1",
    onChange: ({ members, total }) => seen.push([Date.now(), total, members.map((m) => m.values.user)]),
  });
  window.joined = true;
</script>
"""


def readme_page():
    """The README's "Presence in ten lines" page, as written."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### Presence in ten lines"):]
    return re.search(r"```html\n(.*?)```", section, re.S).group(1)


def start(server_factory, tmp_path, token=ADMIN):
    public = tmp_path / "public"
    shutil.copytree(ROOT / "Public", public)
    (public / "presence.html").write_text(PAGE)
    (public / "readme-presence.html").write_text(readme_page())
    server = server_factory("--public-dir", str(public), token=token).start()
    status, answer = server.request("PUT", "/v1/classes/Presence", {"properties": {
        "room": {"type": "string"}, "user": {"type": "string"}, "status": {"type": "string"}}})
    assert status == 201, answer
    return server


def open_tab(browser, server, user, new=True, **params):
    """A tab (a new one unless `new` is false) showing the presence page as `user`; returns its window handle."""
    if new:
        browser.switch_to.new_window("tab")
    browser.get(f"{server.url}/presence.html?{urlencode({'token': ADMIN, 'user': user, **params})}")
    until(browser, "window.joined === true", timeout=15, message=f"{user} did not join")
    return browser.current_window_handle


def members(browser, handle):
    browser.switch_to.window(handle)
    return browser.execute_script("return [room.total, room.members.map((m) => m.values.user)]")


def wait_members(browser, handle, total, timeout):
    """Waits (bounded) until the tab's list has `total` members; returns the seconds it took."""
    browser.switch_to.window(handle)
    began = time.monotonic()
    until(browser, f"room.total === {total} && room.members.length === {total}", timeout=timeout,
          message=f"the list never had {total} members: {members(browser, handle)}")
    return time.monotonic() - began


def presence_objects(server):
    status, answer = server.request("POST", "/v1/query", {"class": "Presence", "where": [["room", "==", "r1"]],
                                                           "select": ["user"]})
    assert status == 200, answer
    return sorted(o["values"]["user"] for o in answer["objects"])


def close_tab(browser, handle, back_to):
    browser.switch_to.window(handle)
    browser.close()  # fires pagehide, ends the page's streams
    browser.switch_to.window(back_to)


def close_other_tabs(browser, home):
    """Closes every tab but `home` and goes back to it (the session's one browser goes on)."""
    for handle in browser.window_handles:
        if handle != home:
            browser.switch_to.window(handle)
            browser.close()
    browser.switch_to.window(home)


def test_two_tabs_see_each_other_a_closed_tab_leaves_within_the_lease_and_a_reload_never_leaves(
        server_factory, browser, tmp_path):
    server = start(server_factory, tmp_path)
    home = browser.current_window_handle
    admin = EventStreamReader(server, "/v1/events")
    try:
        alice = open_tab(browser, server, "alice")
        bob = open_tab(browser, server, "bob")
        wait_members(browser, alice, 2, timeout=5)
        wait_members(browser, bob, 2, timeout=5)
        assert members(browser, alice) == [2, ["alice", "bob"]]
        assert members(browser, bob) == [2, ["alice", "bob"]]
        assert presence_objects(server) == ["alice", "bob"]
        # Each presence object is owned by its tab's observer, whose lease is the client's default.
        browser.switch_to.window(bob)
        bob_observer, bob_object = browser.execute_script("return [room.observer.id, room.id]")
        assert server.request("GET", f"/v1/objects/{bob_object}")[1]["owner"] == bob_observer
        assert server.request("GET", f"/v1/observers/{bob_observer}")[1]["lease"] == LEASE

        # Reload bob's tab: same observer, same object; alice's list never drops below 2.
        browser.refresh()
        until(browser, "window.joined === true", timeout=15, message="bob did not come back after the reload")
        assert browser.execute_script("return [room.observer.id, room.id]") == [bob_observer, bob_object]
        assert members(browser, bob) == [2, ["alice", "bob"]]
        # Longer than the lease: the old page's closed stream must not let the observer expire.
        time.sleep(LEASE + 2)
        assert members(browser, bob) == [2, ["alice", "bob"]]
        assert members(browser, alice) == [2, ["alice", "bob"]]
        # Every list alice was shown since bob joined had both (a leave and a join would show 1).
        history = browser.execute_script("return seen.map(([, total, users]) => [total, users])")
        since = history[history.index([2, ["alice", "bob"]]):]
        assert all(entry == [2, ["alice", "bob"]] for entry in since), history
        assert not [e for e in admin.events if e[0] in ("observerRemoved", "objectDeleted")], admin.events
        assert presence_objects(server) == ["alice", "bob"]

        # Close bob's tab: he leaves when the lease runs out (the stream stopped; no beacon by default).
        closed = time.monotonic()
        close_tab(browser, bob, alice)
        wait_members(browser, alice, 1, timeout=LEASE + 2)
        took = time.monotonic() - closed
        print(f"a closed tab left the other's list {took:.2f} s after the close (lease {LEASE} s)")
        assert took <= LEASE + 2, took
        assert took >= LEASE - 1, f"left after {took:.2f} s: before its lease ran out (a beacon?)"
        assert members(browser, alice) == [1, ["alice"]]
        removed = admin.wait_for(lambda event, _id, data: event == "observerRemoved" and data["observer"] == bob_observer)
        assert removed[2]["reason"] == "expired"
        admin.wait_for(lambda event, _id, data: event == "objectDeleted" and data["object"] == bob_object)
        assert presence_objects(server) == ["alice"]
    finally:
        admin.close()
        close_other_tabs(browser, home)


def test_with_beacon_a_closed_tab_leaves_at_once(server_factory, browser, tmp_path):
    server = start(server_factory, tmp_path)
    home = browser.current_window_handle
    try:
        alice = open_tab(browser, server, "alice")
        bob = open_tab(browser, server, "bob", beacon="1")
        wait_members(browser, alice, 2, timeout=5)
        closed = time.monotonic()
        close_tab(browser, bob, alice)
        wait_members(browser, alice, 1, timeout=3)
        took = time.monotonic() - closed
        print(f"with a beacon, a closed tab left the other's list {took:.2f} s after the close")
        assert took < 3, took
        assert presence_objects(server) == ["alice"]
        # Alice leaves with leave(): removed at once too.
        browser.switch_to.window(alice)
        browser.execute_async_script("room.leave().then(arguments[0])")
        assert presence_objects(server) == []
        assert server.request("GET", "/v1/observers")[1]["observers"] == []
    finally:
        close_other_tabs(browser, home)


def test_the_readmes_presence_page_runs_as_written(server_factory, browser, tmp_path):
    server = start(server_factory, tmp_path, token=None)  # the README's server runs open
    home = browser.current_window_handle
    try:
        tabs = {}
        for user in ("ann", "ben"):
            browser.switch_to.new_window("tab")
            browser.get(f"{server.url}/readme-presence.html?user={user}")
            tabs[user] = browser.current_window_handle
        for user, handle in tabs.items():
            browser.switch_to.window(handle)
            until(browser, "document.getElementById('count').value === '2'", timeout=10,
                  message=f"{user}'s page never showed 2 members")
            assert browser.find_element("id", "who").text == "ann, ben"
        assert presence_objects(server) == ["ann", "ben"]
    finally:
        close_other_tabs(browser, home)
