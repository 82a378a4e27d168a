"""Edits in the dashboard's Objects table go through a context (/client/context.js): a cell edited in
place shows the new value at once, marked pending; Undo takes it back, Discard forgets, Save sends one
transaction; a conflict (the object changed on the server meanwhile) shows both values and lets the
user keep theirs or take the server's (chromium, real server)."""

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys
from test_dashboard import attribute_values, click, created, fill, open_dashboard, shown, wait

CELL = 'tr[data-object="{}"] td[data-key-path="{}"]'


def accounts(server):
    server.request("PUT", "/v1/classes/Account", {"properties": {"balance": {"type": "number"}, "owner": {"type": "string"}}})
    for name, balance in [("a", 50), ("b", 150), ("c", 300)]:
        created(server, "/v1/objects", {"id": f"acct-{name}", "class": "Account", "values": {"balance": balance, "owner": name}})


def show_balances(browser):
    """The table: accounts, by balance, with the balance as a column."""
    form = browser.find_element(By.ID, "query-form")
    fill(form, "class", "Account")
    fill(form, "columns", "balance")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    shown(browser, CELL.format("acct-c", "balance"), "300")
    click(browser, 'th button[data-sort="balance"]')
    # The sorted query is live (its header says so) before a cell is edited: a new query redraws every row.
    wait(browser).until(lambda b: attribute_values(b, 'th[aria-sort="ascending"] button', "data-sort") == ["balance"])
    wait(browser).until(lambda b: rows(b) == ["acct-a", "acct-b", "acct-c"])


def rows(browser):
    return browser.execute_script("return [...document.querySelectorAll('#objects-body tr')].map((row) => row.dataset.object)")


def edit(browser, object_id, key_path, text):
    """Double-clicks the cell and types `text` and Enter into its field (the row may be redrawn
    between finding the cell and the click, by a record or the background load of the object)."""
    selector = CELL.format(object_id, key_path)

    def open_field(b):
        try:
            ActionChains(b).double_click(b.find_element(By.CSS_SELECTOR, selector)).perform()
            return b.find_element(By.CSS_SELECTOR, selector + " input")
        except (StaleElementReferenceException, NoSuchElementException):
            return False

    field = wait(browser).until(open_field)
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(text, Keys.ENTER)


def pending_cells(browser):
    return browser.execute_script("""
        return [...document.querySelectorAll('#objects-body td.pending')].map((td) => td.closest('tr').dataset.object + '.' + td.dataset.keyPath)
    """)


def balance(server, name):
    return server.request("GET", f"/v1/objects/acct-{name}")[1]["values"]["balance"]


def balances_shown(server_factory, browser):
    """A fresh server with the accounts, its dashboard open on their balances; the server."""
    server = server_factory().start()
    accounts(server)
    open_dashboard(browser, server)
    show_balances(browser)
    return server


def test_an_edit_shows_at_once_marked_pending_and_undo_discard_and_save_work(server_factory, browser):
    server = balances_shown(server_factory, browser)
    edit(browser, "acct-a", "balance", "500")
    # At once, before any save: the value, the order (by balance), the mark, the count.
    wait(browser).until(lambda b: rows(b) == ["acct-b", "acct-c", "acct-a"])
    shown(browser, CELL.format("acct-a", "balance"), "500")
    assert pending_cells(browser) == ["acct-a.balance"]
    shown(browser, "#pending-count", "1 change pending")
    assert balance(server, "a") == 50

    click(browser, "#pending-undo")
    wait(browser).until(lambda b: rows(b) == ["acct-a", "acct-b", "acct-c"] and not pending_cells(b))
    shown(browser, CELL.format("acct-a", "balance"), "50")

    edit(browser, "acct-b", "balance", "1")
    wait(browser).until(lambda b: pending_cells(b) == ["acct-b.balance"])
    click(browser, "#pending-discard")
    wait(browser).until(lambda b: not pending_cells(b))
    shown(browser, CELL.format("acct-b", "balance"), "150")

    edit(browser, "acct-b", "balance", "10")
    edit(browser, "acct-c", "balance", "20")
    shown(browser, "#pending-count", "2 changes pending")
    before = server.request("GET", "/v1/stats")[1]["revision"]
    click(browser, "#pending-save")
    shown(browser, "#pending-result", "Saved as one transaction")
    wait(browser).until(lambda b: not pending_cells(b))
    assert (balance(server, "b"), balance(server, "c")) == (10, 20)
    assert server.request("GET", "/v1/stats")[1]["revision"] == before + 1, "one transaction, one revision"
    assert rows(browser) == ["acct-b", "acct-c", "acct-a"]
    shown(browser, "#pending-count", "No pending changes.")


def test_a_conflict_shows_both_values_and_the_user_chooses(server_factory, browser):
    server = balances_shown(server_factory, browser)
    edit(browser, "acct-a", "balance", "70")
    shown(browser, CELL.format("acct-a", "balance"), "70")
    # Another client changes acct-a meanwhile; the context knows the revision it edited.
    shown(browser, "#pending-count", "1 change pending")
    server.request("PUT", "/v1/objects/acct-a/values/balance", {"value": 99})
    click(browser, "#pending-save")
    shown(browser, "#pending-result", "Conflict")
    conflict = browser.find_element(By.ID, "pending-conflict")
    assert conflict.is_displayed()
    shown(browser, '#pending-conflict tr[data-object="acct-a"] .mine', "70")
    shown(browser, '#pending-conflict tr[data-object="acct-a"] .theirs', "99")
    assert pending_cells(browser) == ["acct-a.balance"], "still pending"
    click(browser, "#pending-conflict .keep-mine")
    shown(browser, "#pending-result", "Saved as one transaction")
    wait(browser).until(lambda b: balance(server, "a") == 70)

    # Again, and this time the server's value is taken.
    edit(browser, "acct-b", "balance", "5")
    wait(browser).until(lambda b: pending_cells(b) == ["acct-b.balance"])
    server.request("PUT", "/v1/objects/acct-b/values/balance", {"value": 777})
    click(browser, "#pending-save")
    shown(browser, '#pending-conflict tr[data-object="acct-b"] .theirs', "777")
    click(browser, "#pending-conflict .take-theirs")
    wait(browser).until(lambda b: not pending_cells(b))
    shown(browser, CELL.format("acct-b", "balance"), "777")
    assert balance(server, "b") == 777
