"""The README's "An app that works offline" page, run as written (chromium, real server, a copy of
Public/ named by --public-dir): a todo shows at once and is saved; offline (DevTools) another shows
at once and waits; a reload keeps it (the page loads, only /v1/transactions stays unreachable);
back online it is saved exactly once."""

import shutil

from conftest import ROOT
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from test_client_context import network
from test_dashboard import shown, wait
from test_readme_pages import readme_pages


def todos(browser):
    return browser.execute_script("return [...document.querySelectorAll('#todos li')].map((li) => li.textContent)")


def add(browser, text):
    field = browser.find_element(By.CSS_SELECTOR, "#add input[name=text]")
    field.send_keys(text, Keys.ENTER)


def stored(server):
    objects = server.request("GET", "/v1/objects?class=Todo")[1]["objects"]
    return sorted(object["values"]["text"] for object in objects)


def test_the_readme_offline_app_runs_as_written(server_factory, browser, tmp_path):
    page = readme_pages()["Todos, offline"]
    assert len(page.strip().splitlines()) <= 20, "twenty lines"
    public = tmp_path / "public"
    shutil.copytree(ROOT / "Public", public)
    (public / "todos.html").write_text(page)
    server = server_factory("--public-dir", str(public)).start()
    server.request("PUT", "/v1/classes/Todo", {"properties": {"text": {"type": "string"}, "at": {"type": "number"}}})
    browser.get(server.url + "/todos.html")
    browser.execute_script("indexedDB.deleteDatabase('obs-client')")
    browser.get(server.url + "/todos.html")
    wait(browser, 10).until(lambda b: b.execute_script("return document.querySelector('#todos') !== null"))

    add(browser, "milk")
    wait(browser).until(lambda b: todos(b) == ["milk"])
    shown(browser, "#state", "saved")
    assert stored(server) == ["milk"]

    network(browser, offline=True)
    add(browser, "eggs")
    wait(browser).until(lambda b: todos(b) == ["milk", "eggs"])  # at once, offline
    shown(browser, "#state", "offline", timeout=10)

    network(browser, blocked=["*/v1/transactions*"])
    browser.refresh()
    wait(browser, 10).until(lambda b: todos(b) == ["milk", "eggs"])  # the reload keeps it
    shown(browser, "#state", "offline", timeout=10)
    assert stored(server) == ["milk"]

    network(browser)
    wait(browser, 15).until(lambda b: stored(server) == ["eggs", "milk"])
    shown(browser, "#state", "saved", timeout=10)
    assert todos(browser) == ["milk", "eggs"]
