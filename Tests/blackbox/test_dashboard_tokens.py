"""The dashboard's Tokens panel (contract 13) in a real browser, against the real server: a token
made in the page with a scope, its secret shown once, listed and kept current from the admin
stream, its ttl changed, revoked; observers are marked with the token that made them.
"""

import time

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from test_dashboard import click, fill, gone, open_dashboard, shown, wait

ADMIN = "admin-token"


def open_with_token(browser, server):
    """The dashboard with the service token already kept for the tab."""
    browser.get(server.url + "/healthz")
    browser.execute_script("sessionStorage.setItem('obs-server.token', arguments[0])", ADMIN)
    open_dashboard(browser, server)


def row(token_id):
    return f'#tokens-body tr[data-token="{token_id}"]'


def test_a_token_made_in_the_page_is_shown_once_listed_changed_and_revoked(server_factory, browser):
    server = server_factory(token=ADMIN).start()
    open_with_token(browser, server)
    form = browser.find_element(By.ID, "token-create-form")
    fill(form, "name", "alice-laptop")
    fill(form, "ttl", "3600")
    fill(form, "client", "alice")
    # The first scope row starts with read and observe; it gets a class and an id glob.
    first = form.find_element(By.CSS_SELECTOR, ".scope")
    first.find_element(By.CSS_SELECTOR, 'input[value="write"]').click()
    fill(first, "class", "Doc")
    fill(first, "ids", "room1-*")
    form.find_element(By.CSS_SELECTOR, ".add-scope").click()
    second = form.find_elements(By.CSS_SELECTOR, ".scope")[1]
    second.find_element(By.CSS_SELECTOR, 'input[value="post"]').click()
    second.find_element(By.CSS_SELECTOR, 'input[value="subscribe"]').click()
    fill(second, "names", "chat.room1.*")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()

    # The secret, once: shown with a copy button and the note, and it works.
    secret_panel = wait(browser).until(EC.visibility_of_element_located((By.ID, "token-secret")))
    assert "shown once" in secret_panel.text
    secret = secret_panel.find_element(By.CSS_SELECTOR, ".secret-value").text
    assert secret.startswith("obs_st_")
    assert secret_panel.find_element(By.CSS_SELECTOR, ".secret-copy").text == "Copy"
    tokens = server.request("GET", "/v1/tokens")[1]["tokens"]
    assert len(tokens) == 1
    token = tokens[0]
    assert (token["name"], token["client"]) == ("alice-laptop", "alice")
    assert token["scopes"] == [
        {"allow": ["read", "observe", "write"], "class": "Doc", "ids": "room1-*"},
        {"allow": ["post", "subscribe"], "names": "chat.room1.*"},
    ]
    assert server.request("GET", "/v1/objects", headers={"Authorization": f"Bearer {secret}"})[0] == 200
    assert server.request("GET", "/v1/tokens", headers={"Authorization": f"Bearer {secret}"})[0] == 403

    # Listed (from the admin stream's tokenCreated), never with the secret.
    shown(browser, row(token["id"]), "alice-laptop")
    shown(browser, row(token["id"]), "read, observe, write · class Doc · ids room1-*")
    shown(browser, row(token["id"]), "post, subscribe · names chat.room1.*")
    shown(browser, row(token["id"]), "in 60 min")
    assert browser.page_source.count(secret) == 1
    shown(browser, '#feed li[data-kind="tokenCreated"]', "alice-laptop")
    assert secret not in browser.find_element(By.ID, "feed").text

    # Done: the page forgets it; a reload does not bring it back.
    browser.find_element(By.CSS_SELECTOR, "#token-secret .secret-done").click()
    assert not browser.find_element(By.ID, "token-secret").is_displayed()
    assert secret not in browser.page_source
    open_dashboard(browser, server)
    shown(browser, row(token["id"]), "alice-laptop")
    assert secret not in browser.page_source

    # An observer the token makes is marked with it, and counted on the token's row.
    status, observer = server.request("POST", "/v1/observers", {"name": "alice-tab"},
                                      headers={"Authorization": f"Bearer {secret}", "Obs-Client": "alice"})
    assert status == 201, observer
    observer_row = f'#observers-body tr[data-observer="{observer["id"]}"]'
    wait(browser).until(EC.presence_of_element_located((By.CSS_SELECTOR, observer_row)))
    assert browser.find_element(By.CSS_SELECTOR, observer_row).get_attribute("data-token") == token["id"]
    shown(browser, observer_row, f"token alice-laptop ({token['id']})")
    wait(browser).until(lambda b: b.find_element(By.CSS_SELECTOR, f"{row(token['id'])} td:nth-child(4)").text == "1")

    # A new ttl from the row: the expiry follows (tokenChanged).
    fill(browser.find_element(By.CSS_SELECTOR, row(token["id"])), "ttl", "90")
    click(browser, f'{row(token["id"])} button[aria-label="Change the ttl of alice-laptop"]')
    shown(browser, row(token["id"]), "ttl changed")
    wait(browser).until(lambda b: "s" in b.find_element(By.CSS_SELECTOR, f"{row(token['id'])} td:nth-child(3)").text
                        and "min" not in b.find_element(By.CSS_SELECTOR, f"{row(token['id'])} td:nth-child(3)").text)
    expires = server.request("GET", f"/v1/tokens/{token['id']}")[1]["expiresAt"]
    assert expires != token["expiresAt"]

    # Revoke asks first; dismissed, nothing happens.
    click(browser, f'{row(token["id"])} button.danger')
    wait(browser).until(EC.alert_is_present()).dismiss()
    time.sleep(0.3)
    assert server.request("GET", f"/v1/tokens/{token['id']}")[0] == 200
    click(browser, f'{row(token["id"])} button.danger')
    wait(browser).until(EC.alert_is_present()).accept()
    wait(browser).until(gone(By.CSS_SELECTOR, row(token["id"])))
    assert server.request("GET", "/v1/tokens")[1]["tokens"] == []
    assert server.request("GET", "/v1/objects", headers={"Authorization": f"Bearer {secret}"})[0] == 401
    shown(browser, '#feed li[data-kind="tokenRevoked"]', f"{token['id']} (revoked)")
    # Its observer stays (its lease runs), still marked.
    assert browser.find_element(By.CSS_SELECTOR, observer_row).get_attribute("data-token") == token["id"]


def test_tokens_made_elsewhere_appear_live_and_expire_away(server_factory, browser):
    server = server_factory(token=ADMIN).start()
    open_with_token(browser, server)
    shown(browser, "#tokens-body", "No scoped tokens.")
    status, token = server.request("POST", "/v1/tokens", {"name": "short", "ttl": 2,
                                                          "scopes": [{"allow": ["read"], "class": "Doc"}]})
    assert status == 201
    shown(browser, row(token["id"]), "read · class Doc")
    assert token["token"] not in browser.page_source
    # The server's timer ends it: tokenRevoked (expired) removes the row.
    wait(browser, 5).until(gone(By.CSS_SELECTOR, row(token["id"])))
    shown(browser, '#feed li[data-kind="tokenRevoked"]', "(expired)")


def test_a_scope_the_server_refuses_is_said_next_to_the_form(server_factory, browser):
    server = server_factory(token=ADMIN).start()
    open_with_token(browser, server)
    form = browser.find_element(By.ID, "token-create-form")
    # read and observe, but no class, ids, owned or names: 400 invalidRequest.
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown(browser, "#token-create-form .result", "400 invalidRequest")
    assert "error" in form.find_element(By.CSS_SELECTOR, ".result").get_attribute("class")
    assert not browser.find_element(By.ID, "token-secret").is_displayed()
    # No action at all: said by the page, nothing sent.
    for box in form.find_elements(By.CSS_SELECTOR, ".scope input[name=allow]:checked"):
        box.click()
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown(browser, "#token-create-form .result", "at least one scope")
    assert server.request("GET", "/v1/tokens")[1]["tokens"] == []
