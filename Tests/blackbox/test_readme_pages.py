"""The README's HTML pages, run as written (chromium, real server): the pages meant for `Public/` from a
copy of it named by `--public-dir`, and the page for another origin from a plain static server on
another port (python's http.server, which sends no charset), with ObsServer started with `--cors-origins`.
"""

import functools
import http.server
import re
import shutil
import threading
import urllib.request

import pytest
from conftest import ROOT, free_port
from selenium.webdriver.common.by import By
from test_dashboard import created, shown, wait


def readme_pages():
    """Each ```html block of the README, by its <title>."""
    blocks = re.findall(r"```html\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return {re.search(r"<title>(.*?)</title>", block).group(1): block for block in blocks}


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def static_site(tmp_path):
    """A static server of tmp_path/site on a free loopback port: yields (directory, origin)."""
    site = tmp_path / "site"
    site.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()),
                                             functools.partial(QuietHandler, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield site, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_every_readme_page_declares_utf8():
    pages = readme_pages()
    assert {"Balance", "Open orders", "Room r1", "Balance, from another origin"} <= set(pages), list(pages)
    for title, page in pages.items():
        assert '<meta charset="utf-8">' in page, title


def test_the_readme_page_for_another_origin_runs_from_another_origin(server_factory, browser, static_site):
    site, origin = static_site
    server = server_factory("--cors-origins", origin).start()
    # As written, but for this server's port instead of 8080.
    page = readme_pages()["Balance, from another origin"].replace("http://localhost:8080", server.url)
    assert page != readme_pages()["Balance, from another origin"], "the page does not name ObsServer's origin"
    (site / "balance.html").write_text(page)
    with urllib.request.urlopen(f"{origin}/balance.html", timeout=5) as answer:
        assert "charset" not in answer.headers["Content-Type"]  # the page's own <meta charset> decides
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 100}})
    browser.get(f"{origin}/balance.html")
    shown(browser, "#balance", "100", timeout=10)
    assert browser.execute_script("return document.characterSet") == "UTF-8"
    server.request("PUT", "/v1/objects/acct-1/values/balance", {"value": 120})
    shown(browser, "#balance", "120")
    # The page's writes went to ObsServer, not to the static server: its observer is there.
    observers = server.request("GET", "/v1/observers")[1]["observers"]
    assert len(observers) == 1, observers


def test_the_readme_pages_for_public_run_from_a_copy_named_by_public_dir(server_factory, browser, tmp_path):
    public = tmp_path / "public"
    shutil.copytree(ROOT / "Public", public)
    pages = readme_pages()
    for name, title in [("balance.html", "Balance"), ("orders.html", "Open orders"), ("room.html", "Room r1")]:
        (public / name).write_text(pages[title])
    server = server_factory("--public-dir", str(public)).start()
    assert server.request("GET", "/orders.html")[0] == 200

    # Open orders before the class exists: the page says what is missing instead of failing silently.
    browser.get(server.url + "/orders.html")
    shown(browser, "#orders", "no class 'Order'", timeout=10)
    shown(browser, "#orders", "define it first (PUT /v1/classes/Order")
    # With the class the README gives, the ten open orders by total, live.
    server.request("PUT", "/v1/classes/Order",
                   {"properties": {"status": {"type": "string"}, "total": {"type": "number"}}})
    for order, status, total in [("o1", "open", 10), ("o2", "open", 30), ("o3", "closed", 99), ("o4", "open", 20)]:
        created(server, "/v1/objects", {"id": order, "class": "Order", "values": {"status": status, "total": total}})
    browser.get(server.url + "/orders.html")
    items = lambda b: [li.text for li in b.find_elements(By.CSS_SELECTOR, "#orders li")]  # noqa: E731
    wait(browser, 10).until(lambda b: items(b) == ["o2: 30", "o4: 20", "o1: 10"])
    server.request("PUT", "/v1/objects/o1/values/total", {"value": 50})
    wait(browser).until(lambda b: items(b) == ["o1: 50", "o2: 30", "o4: 20"])

    # Balance, live.
    created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 7}})
    browser.get(server.url + "/balance.html")
    shown(browser, "#balance", "7", timeout=10)

    # Presence, with the class the README defines.
    server.request("PUT", "/v1/classes/Presence", {"properties": {
        "room": {"type": "string"}, "user": {"type": "string"}, "status": {"type": "string"}}})
    browser.get(server.url + "/room.html?user=ada")
    shown(browser, "#count", "1", timeout=10)
    shown(browser, "#who", "ada")
