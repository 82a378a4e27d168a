"""Scoped tokens (contract 13) in the JavaScript client, in a real browser against the real server:
a page whose token comes from a function hears `revoked` and stops, and a page on expiring JWTs
renews them before their exp and goes on with the same observer.
"""

import base64
import hashlib
import hmac
import json
import time

from test_client import open_page, run, until

ADMIN = "admin-token"
JWT_SECRET = "0123456789abcdef0123456789abcdef-js36"
DOC_SCOPES = [{"allow": ["read", "observe"], "class": "Doc"}]

# The page's client: a token function that counts its calls, and a fetch that counts each URL. Its
# name is the token's `client` (a token made with one refuses writes whose Obs-Client differs).
SETUP = """
    window.asked = [];
    window.fetched = [];
    window.seen = { changes: [], revoked: [], errors: [], states: [] };
    window.client = new obs.ObsClient({
      name: clientName,
      token: async () => { asked.push(Date.now()); return tokens[Math.min(asked.length, tokens.length) - 1]; },
      fetch: (url, init) => { fetched.push(String(url)); return fetch(url, init); },
    });
    window.observer = await client.createObserver({ lease: 60 });
    await observer.observe("d1", "x", { options: ["new"] });
    window.stream = observer.stream({
      onChange: (record) => seen.changes.push(record.new),
      onRevoked: (info) => seen.revoked.push(info),
      onError: (error) => seen.errors.push([error.status, error.details.reason ?? null]),
      onState: (state) => seen.states.push(state),
    });
"""


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def mint(claims):
    """An HS256 JWT signed with the server's --jwt-secret."""
    signing = f"{b64url(json.dumps({'alg': 'HS256', 'typ': 'JWT'}).encode())}.{b64url(json.dumps(claims).encode())}"
    signature = hmac.new(JWT_SECRET.encode(), signing.encode(), hashlib.sha256).digest()
    return f"{signing}.{b64url(signature)}"


def start(server_factory, *args):
    server = server_factory(*args, token=ADMIN).start()
    assert server.request("PUT", "/v1/classes/Doc", {"properties": {"x": {"type": "number"}}})[0] == 201
    assert server.request("POST", "/v1/objects", {"id": "d1", "class": "Doc", "values": {"x": 0}})[0] == 201
    return server


def streams_opened(browser):
    return len([url for url in browser.execute_script("return fetched") if "/events" in url])


def test_a_page_on_a_token_function_hears_revoked_and_does_not_reconnect(server_factory, browser):
    server = start(server_factory)
    status, token = server.request("POST", "/v1/tokens", {"name": "page", "scopes": DOC_SCOPES, "client": "alice"})
    assert status == 201
    open_page(browser, server)
    run(browser, f"window.tokens = [{json.dumps(token['token'])}]; window.clientName = 'alice';" + SETUP)
    until(browser, "stream.state === 'live'")
    assert server.request("PUT", "/v1/objects/d1/values/x", {"value": 1})[0] == 200
    until(browser, "seen.changes.includes(1)")
    # The observer is the token's (the dashboard marks it so).
    observer_id = browser.execute_script("return observer.id")
    assert server.request("GET", f"/v1/observers/{observer_id}")[1]["tokenId"] == token["id"]

    assert server.request("DELETE", f"/v1/tokens/{token['id']}")[0] == 204
    until(browser, "seen.revoked.length === 1", timeout=3)
    assert browser.execute_script("return seen.revoked") == [{"reason": "revoked", "token": token["id"]}]
    assert browser.execute_script("return seen.errors") == [[401, "revoked"]]
    time.sleep(3)  # longer than the reconnect backoff the server's `retry:` asks for
    assert browser.execute_script("return stream.state") == "closed"
    assert streams_opened(browser) == 1, browser.execute_script("return fetched")
    # A request with the revoked token is refused for good: no new token is asked for, no retry.
    before = len(browser.execute_script("return fetched"))
    refused = run(browser, "try { await client.getObject('d1'); } catch (e) { return [e.status, e.details.reason]; }")
    assert refused == [401, "revoked"]
    assert len(browser.execute_script("return fetched")) == before + 1
    assert len(browser.execute_script("return asked")) == 1
    # The observer stays until its lease ends (13): only its token is gone.
    assert server.request("GET", f"/v1/observers/{observer_id}")[0] == 200


def test_a_page_on_expiring_jwts_renews_them_before_exp_and_keeps_its_observer(server_factory, browser):
    server = start(server_factory, "--jwt-secret", JWT_SECRET)
    open_page(browser, server)
    now = int(time.time())
    claims = {"jti": "page-1", "sub": "bob", "obs": {"scopes": DOC_SCOPES}}
    # The first JWT has expired already (a 401 "expired": the function is asked again); the second
    # lives 6 s (renewed at 80% of that, before its exp); the third lives long.
    tokens = [mint({**claims, "exp": now - 1, "nbf": now - 60}), mint({**claims, "exp": now + 6}),
              mint({**claims, "exp": now + 3600})]
    run(browser, f"window.tokens = {json.dumps(tokens)}; window.clientName = 'bob';" + SETUP)
    until(browser, "stream.state === 'live'")
    assert len(browser.execute_script("return asked")) == 2
    observer_id = browser.execute_script("return observer.id")
    assert server.request("GET", f"/v1/observers/{observer_id}")[1]["tokenId"] == "page-1"

    # The third JWT is asked for before the second's exp, without any request needing it.
    until(browser, "asked.length === 3", timeout=8)
    assert browser.execute_script("return asked[2]") < (now + 6) * 1000
    # At the second's exp the server ends the stream (`revoked`, expired); it resumes with the third.
    time.sleep(max(0, now + 7.5 - time.time()))
    assert server.request("PUT", "/v1/objects/d1/values/x", {"value": 2})[0] == 200
    until(browser, "seen.changes.includes(2)", timeout=5)
    assert browser.execute_script("return seen.revoked") == []
    assert browser.execute_script("return seen.errors") == []
    assert browser.execute_script("return stream.state") == "live"
    assert streams_opened(browser) == 2
    assert len(browser.execute_script("return asked")) == 3
    # The same observer all along: its id is the JWT's jti, which every renewed JWT carries.
    assert browser.execute_script("return observer.id") == observer_id
    assert run(browser, "return (await observer.get()).id") == observer_id

    # Revoking the jti ends it for good: reported, no reconnect.
    assert server.request("DELETE", "/v1/tokens/page-1")[0] == 204
    until(browser, "seen.revoked.length === 1", timeout=3)
    assert browser.execute_script("return seen.revoked") == [{"reason": "revoked", "token": "page-1"}]
    time.sleep(2)
    assert streams_opened(browser) == 2
