"""docs/WEBHOOKS.md's verification snippets, Python and Node, run as written against a real delivery."""

import base64
import json
import re
import subprocess

from conftest import ROOT
from webhooks import Receiver

DOC = (ROOT / "docs" / "WEBHOOKS.md").read_text()


def snippet(language):
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC, re.S)
    assert len(blocks) == 1, f"one {language} block in WEBHOOKS.md"
    return blocks[0]


def a_real_delivery(server_factory):
    receiver = Receiver(204)
    try:
        server = server_factory("--webhook-hosts", "127.0.0.1:*").start()
        assert server.request("POST", "/v1/objects", {"id": "order-17", "values": {"status": "new"}})[0] == 201
        status, observer = server.request("POST", "/v1/observers", {"deliver": {"url": receiver.url}})
        assert status == 201
        server.request("POST", f"/v1/observers/{observer['id']}/observations",
                       {"object": "order-17", "keyPath": "status", "options": ["new"]})
        assert server.request("PUT", "/v1/objects/order-17/values/status", {"value": "placed ✓"})[0] == 200
        request = receiver.wait_until(lambda requests: requests)[0]
        return observer["deliver"]["secret"], request["headers"], request["body"]
    finally:
        receiver.stop()


def test_the_python_snippet_verifies_a_real_delivery(server_factory):
    secret, headers, body = a_real_delivery(server_factory)
    namespace = {}
    exec(snippet("python"), namespace)
    verify = namespace["verify_webhook"]
    assert verify(secret, headers, body)
    assert not verify(secret, headers, body.replace(b"placed", b"paid  "))
    assert not verify("whsec_" + base64.b64encode(b"k" * 32).decode(), headers, body)
    assert not verify(secret, {**headers, "webhook-timestamp": str(int(headers["webhook-timestamp"]) - 3600)}, body)


def test_the_node_snippet_verifies_a_real_delivery(server_factory, tmp_path):
    secret, headers, body = a_real_delivery(server_factory)
    (tmp_path / "verify.js").write_text(snippet("js"))
    driver = """
const { verifyWebhook } = require(process.argv[1]);
const input = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
const body = Buffer.from(input.body, "base64");
const tampered = Buffer.from(body.toString("utf8").replace("placed", "paid  "), "utf8");
console.log(JSON.stringify([
  verifyWebhook(input.secret, input.headers, body),
  verifyWebhook(input.secret, input.headers, tampered),
  verifyWebhook("whsec_" + Buffer.alloc(32, 1).toString("base64"), input.headers, body),
]));
"""
    result = subprocess.run(
        ["node", "-e", driver, str(tmp_path / "verify.js")],
        input=json.dumps({"secret": secret, "headers": headers, "body": base64.b64encode(body).decode()}),
        capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [True, False, False]
