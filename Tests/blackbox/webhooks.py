"""A webhook receiver on loopback for the delivery tests (section 16): records every request and
answers as its mode says: a status, `hang` (never answers), or `close` (drops the connection)."""

import base64
import hashlib
import hmac
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, mode=204):
        self.mode = mode  # an int status, "hang", "close", or a callable(request index) -> one of those
        self.requests = []  # dicts: time, headers (lower-case names), body (bytes), json
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with receiver.lock:
                    index = len(receiver.requests)
                    receiver.requests.append({
                        "time": time.monotonic(), "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body, "json": json.loads(body)})
                mode = receiver.mode(index) if callable(receiver.mode) else receiver.mode
                if mode == "hang":
                    receiver.stopping.wait(120)
                    self.close_connection = True
                    return
                if mode == "close":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(mode)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def snapshot(self):
        with self.lock:
            return list(self.requests)

    def events(self):
        """Every event received, in arrival order (repeats included)."""
        return [event for request in self.snapshot() for event in request["json"]["events"]]

    def wait_until(self, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self.snapshot()):
                return self.snapshot()
            time.sleep(0.02)
        raise AssertionError(f"receiver never saw what was expected; got {len(self.snapshot())} requests")

    def stop(self):
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


def verify(secret, headers, body):
    """The Standard Webhooks check (docs/WEBHOOKS.md's Python snippet): True when a v1 signature matches."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(hmac.compare_digest(expected, part.removeprefix("v1,"))
               for part in headers["webhook-signature"].split() if part.startswith("v1,"))
