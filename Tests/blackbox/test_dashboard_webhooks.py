"""The dashboard's observers table shows a delivering observer (section 16) live: its URL, state,
attempts and last error under its name, its unacknowledged events as its backlog, no lease."""

from selenium.webdriver.common.by import By

from test_dashboard import created, open_dashboard, shown, wait
from webhooks import Receiver


def test_a_delivering_observer_shows_its_delivery_live(server_factory, browser):
    receiver = Receiver(500)
    try:
        server = server_factory("--webhook-hosts", "127.0.0.1:*").start()
        created(server, "/v1/objects", {"id": "acct-1", "values": {"balance": 0}})
        observer = created(server, "/v1/observers", {"name": "billing", "deliver": {"url": receiver.url}})
        created(server, f"/v1/observers/{observer['id']}/observations", {"object": "acct-1", "keyPath": "balance"})
        open_dashboard(browser, server)
        row = f'tr[data-observer="{observer["id"]}"]'
        assert server.request("PUT", "/v1/objects/acct-1/values/balance", {"value": 1})[0] == 200
        shown(browser, f"{row} .delivery", f"delivers to {receiver.url}")
        shown(browser, f'{row} .delivery[data-state="retrying"]', "status 500", timeout=6)
        shown(browser, f'{row} td[data-label="backlog"]', "1")
        shown(browser, f'{row} td[data-label="lease"]', "none")
        receiver.mode = 204
        shown(browser, f'{row} .delivery[data-state="idle"]', "acknowledged 1", timeout=8)
        wait(browser).until(lambda b: b.find_element(By.CSS_SELECTOR, f'{row} td[data-label="backlog"]').text == "0")
    finally:
        receiver.stop()
