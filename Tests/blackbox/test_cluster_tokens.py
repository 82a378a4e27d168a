"""Section 13 on a cluster (section 11): a token made on one node works on every node at once, and
its revocation or expiry, decided once in the log, ends the streams opened with it on every node
within a second."""

import time

import pytest

from cluster import Cluster, ok, wait_until
from conftest import EventStreamReader

ADMIN = "cluster-admin"
SCOPES = [{"allow": ["read", "observe", "write"], "class": "Doc", "ids": "room1-*"}]


@pytest.fixture(scope="module")
def cluster():
    cluster = Cluster(size=2, token=ADMIN)
    a = cluster.nodes[0]
    ok(*a.request("PUT", "/v1/classes/Doc", {"properties": {"title": {"type": "string"}}}))
    for object_id in ("room1-a", "room2-a"):
        ok(*a.request("POST", "/v1/objects", {"id": object_id, "class": "Doc", "values": {"title": "t"}}))
    yield cluster
    cluster.stop()


class As:
    """A node seen through another credential (for `EventStreamReader`)."""

    def __init__(self, node, token):
        self.node, self.token = node, token

    def connection(self, timeout=10):
        return self.node.connection(timeout=timeout)


def bearer(secret):
    return {"Authorization": f"Bearer {secret}"}


def make_token(node, **extra):
    return ok(*node.request("POST", "/v1/tokens", {"scopes": SCOPES, **extra}), expected=(201,))


def test_a_token_made_on_one_node_works_on_the_other_at_once_and_its_scopes_hold(cluster):
    a, b = cluster.nodes
    token = make_token(a)
    status, body = b.request("GET", "/v1/objects", headers=bearer(token["token"]))
    assert status == 200 and [o["id"] for o in body["objects"]] == ["room1-a"], body
    status, body = b.request("PUT", "/v1/objects/room2-a/values/title", {"value": "x"}, headers=bearer(token["token"]))
    assert status == 403, body
    observer = ok(*b.request("POST", "/v1/observers", {}, headers=bearer(token["token"])), expected=(201,))
    assert observer["tokenId"] == token["id"]
    status, body = a.request("GET", f"/v1/observers/{observer['id']}", headers=bearer(token["token"]))
    assert status == 200, body


@pytest.mark.parametrize("ending", ["revoked", "expired"])
def test_streams_on_every_node_end_within_a_second_of_the_revocation_or_expiry(cluster, ending):
    a, b = cluster.nodes
    token = make_token(a, **({"ttl": 3} if ending == "expired" else {}))
    secret = token["token"]
    observer = ok(*a.request("POST", "/v1/observers", {"lease": 60}, headers=bearer(secret)), expected=(201,))
    path = f"/v1/observers/{observer['id']}/events"
    streams = [EventStreamReader(As(node, secret), path) for node in (a, b)]
    admins = EventStreamReader(As(b, ADMIN), path)
    if ending == "revoked":
        time.sleep(0.3)
        start = time.monotonic()
        ok(*a.request("DELETE", f"/v1/tokens/{token['id']}"), expected=(204,))
    else:
        start = time.monotonic() + 3 - 0.2  # created about 0.2 s ago, at the latest
    for stream in streams:
        _, _, data = stream.wait_for(lambda name, _id, _data: name == "revoked", timeout=6)
        assert data == {"reason": ending, "token": token["id"]}
        stream.thread.join(timeout=2)
        assert not stream.thread.is_alive(), "the stream ended"
    took = time.monotonic() - start
    assert took < (1.0 if ending == "revoked" else 1.5), f"{took:.2f} s after the {ending}"
    for stream in streams:
        stream.close()
    # The admin's stream of the same observer goes on, and the token answers 401 on both nodes.
    assert admins.thread.is_alive()
    admins.close()
    for node in (a, b):
        status, body = node.request("GET", "/v1/objects", headers=bearer(secret))
        assert status == 401 and body["error"]["details"]["reason"] == ending, body


def test_a_write_made_after_the_revocation_on_another_node_is_refused(cluster):
    a, b = cluster.nodes
    token = make_token(a)
    ok(*b.request("PUT", "/v1/objects/room1-a/values/title", {"value": "before"}, headers=bearer(token["token"])))
    ok(*a.request("DELETE", f"/v1/tokens/{token['id']}"), expected=(204,))
    status, body = b.request("PUT", "/v1/objects/room1-a/values/title", {"value": "after"},
                             headers=bearer(token["token"]))
    assert status == 401 and body["error"]["details"]["reason"] == "revoked", body
    wait_until(lambda: a.request("GET", "/v1/objects/room1-a/values/title")[1]["value"] == "before", 5)
