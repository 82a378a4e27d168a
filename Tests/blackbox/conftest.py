"""Black-box tests: the real obs-server binary, started as a process, driven over HTTP."""

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BINARY = Path(os.environ.get("OBS_SERVER_BINARY", ROOT / ".build" / "debug" / "obs-server"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One obs-server process on a free port; `start` waits (bounded) until /healthz answers."""

    def __init__(self, *args, data_dir=None, token=None, host="127.0.0.1"):
        self.args = list(args)
        self.data_dir = data_dir
        self.token = token
        self.host = host
        self.port = free_port()
        self.process = None

    def start(self, timeout=15):
        command = [str(BINARY), "--host", self.host, "--port", str(self.port), "--public-dir", str(ROOT / "Public"),
                   "--log-level", "error"]
        if self.data_dir:
            command += ["--data-dir", str(self.data_dir)]
        if self.token:
            command += ["--token", self.token]
        self.process = subprocess.Popen(command + self.args, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"obs-server exited {self.process.returncode}: {self.process.stderr.read()}")
            try:
                status, _ = self.request("GET", "/healthz")
                if status == 200:
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("obs-server did not answer /healthz in time")

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process.stderr.close()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.process:
            self.process.stderr.close()

    @property
    def url(self):
        return f"http://{self.host}:{self.port}"

    def connection(self, timeout=10):
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, connection=None):
        """One request; returns (status, decoded JSON or text)."""
        own = connection is None
        connection = connection or self.connection()
        headers = dict(headers or {})
        if self.token and "Authorization" not in headers:
            headers["Authorization"] = f"Bearer {self.token}"
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read().decode()
        finally:
            if own:
                connection.close()
        try:
            return response.status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return response.status, raw


def ok(status, body, expected=(200, 201, 202, 204)):
    assert status in expected, (status, body)
    return body


def wait_until(predicate, timeout=15, message="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{message} not reached in {timeout} s")


class Bank:
    """Accounts that only transfer transactions change (section 15), for the crash tests. A transfer
    reads both balances, then sets them under their revisions and creates a receipt named after
    the transaction's id, in one transaction: after a crash the receipts found say exactly what
    every balance must be, so a transaction applied in part shows, and so does a lost one."""

    def __init__(self, accounts=40, balance=1000):
        self.ids = [f"acct-{index}" for index in range(accounts)]
        self.initial = balance
        self.lock = threading.Lock()
        self.attempted, self.acknowledged, self.unexpected = [], set(), []
        self.repeats = 0  # transactions sent again while their outcome was in doubt

    def open(self, server):
        for account in self.ids:
            ok(*server.request("POST", "/v1/objects", {"id": account, "values": {"balance": self.initial}}),
               expected=(201,))

    def transfer_body(self, server, connection, chance, tx_id):
        """A transfer between two random accounts as they are now (None when a read fails)."""
        source, target = chance.sample(self.ids, 2)
        read = [server.request("GET", f"/v1/objects/{account}", connection=connection) for account in (source, target)]
        if any(status != 200 for status, _ in read):
            return None
        (_, a), (_, b) = read
        amount = chance.randint(1, 60)
        return {"id": tx_id, "expect": [{"object": source, "where": [["balance", ">=", amount]]}], "operations": [
            {"op": "set", "object": source, "keyPath": "balance", "value": a["values"]["balance"] - amount,
             "ifRevision": a["revision"]},
            {"op": "set", "object": target, "keyPath": "balance", "value": b["values"]["balance"] + amount,
             "ifRevision": b["revision"]},
            {"op": "create", "id": tx_id, "values": {"from": source, "to": target, "amount": amount}}]}

    def client(self, server, index, stop, repeat_in_doubt=False):
        """Transfers until `stop` (or, unless `repeat_in_doubt`, until the server stops answering).
        With `repeat_in_doubt`, a transaction without a known outcome (no answer, 502, 503, 504) is
        sent again with the same id until its outcome is known (section 11)."""
        chance = random.Random(index)
        connection = server.connection(timeout=10)
        serial = 0
        while not stop.is_set():
            serial += 1
            tx_id = f"tx-{index}-{serial}"
            status, body, answer = None, None, None
            try:
                body = self.transfer_body(server, connection, chance, tx_id)
                if body is not None:
                    with self.lock:
                        self.attempted.append(tx_id)
                    status, answer = server.request("POST", "/v1/transactions", body, connection=connection)
            except (OSError, http.client.HTTPException):
                connection.close()
                if not repeat_in_doubt:
                    return
                connection = server.connection(timeout=10)
            while repeat_in_doubt and body is not None and status in (None, 502, 503, 504) and not stop.is_set():
                time.sleep(0.05)
                self.repeats += 1
                try:
                    status, answer = server.request("POST", "/v1/transactions", body, connection=connection)
                except (OSError, http.client.HTTPException):
                    connection.close()
                    connection = server.connection(timeout=10)
            if status == 200:
                with self.lock:
                    self.acknowledged.add(tx_id)
            elif status not in (None, 412, 502, 503, 504):
                self.unexpected.append((tx_id, status, answer))
        connection.close()

    def run(self, server, clients, seconds_before, interrupt, seconds_after=0.0, repeat_in_doubt=False):
        """`clients` transferring threads; `interrupt()` after `seconds_before` s (the kill), then
        `seconds_after` s more before they stop."""
        stop = threading.Event()
        threads = [threading.Thread(target=self.client, args=(server, index, stop, repeat_in_doubt))
                   for index in range(clients)]
        for thread in threads:
            thread.start()
        time.sleep(seconds_before)
        interrupt()
        time.sleep(seconds_after)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads), "a client did not stop"
        assert not self.unexpected, self.unexpected[:5]

    def check(self, server):
        """Every acknowledged transfer is there, each whole: the balances are the initial ones moved
        by the receipts found (none missing for a 200), and the total is conserved."""
        connection = server.connection(timeout=10)
        balances = {account: ok(*server.request("GET", f"/v1/objects/{account}", connection=connection))["values"][
            "balance"] for account in self.ids}
        expected, applied = dict.fromkeys(self.ids, self.initial), 0
        for tx_id in self.attempted:
            status, receipt = server.request("GET", f"/v1/objects/{tx_id}", connection=connection)
            assert status in (200, 404), (tx_id, status, receipt)
            if status == 404:
                assert tx_id not in self.acknowledged, f"acknowledged transaction {tx_id} was lost"
                continue
            values = receipt["values"]
            expected[values["from"]] -= values["amount"]
            expected[values["to"]] += values["amount"]
            applied += 1
        connection.close()
        assert sum(balances.values()) == self.initial * len(self.ids), "the total is conserved"
        assert balances == expected, "each balance is the initial one moved by the receipts found"
        return applied


@pytest.fixture
def server_factory():
    started = []

    def make(*args, **kwargs):
        server = ServerProcess(*args, **kwargs)
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


class EventStreamReader:
    """Reads one SSE stream in a thread; `events` collects (event, id, data) as they arrive, and
    `raw` the same with each event's data exactly as sent (for byte comparisons)."""

    def __init__(self, server, path):
        self.events = []
        self.raw = []
        self.comments = 0  # `: …` lines (keep-alives) seen so far
        self.error = None
        self.connection = server.connection(timeout=60)
        headers = {"Accept": "text/event-stream"}
        if server.token:
            headers["Authorization"] = f"Bearer {server.token}"
        self.connection.request("GET", path, headers=headers)
        self.response = self.connection.getresponse()
        assert self.response.status == 200, self.response.read()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        event, event_id, data = "message", None, []
        try:
            while True:
                line = self.response.readline()  # decodes the chunked body (an event may span chunks)
                if not line:
                    return
                line = line.decode().rstrip("\r\n")
                if not line:
                    if data:
                        self.raw.append((event, event_id, "\n".join(data)))
                        self.events.append((event, event_id, json.loads("\n".join(data))))
                    event, event_id, data = "message", None, []
                elif line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("id: "):
                    event_id = int(line[4:])
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line.startswith(":"):
                    self.comments += 1
        except ValueError as error:  # a malformed event: say so in wait_for
            self.error = error
        except (OSError, http.client.HTTPException, AttributeError):
            pass  # closed (AttributeError: the response's file is gone once closed)

    def wait_for(self, predicate, timeout=5):
        """The first event (event, id, data) that satisfies `predicate`, waiting at most `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for item in list(self.events):
                if predicate(*item):
                    return item
            time.sleep(0.02)
        raise AssertionError(f"no matching event in {timeout} s; got {self.events}, reader error {self.error!r}")

    def close(self):
        # A shutdown first: a plain close waits for the reading thread's readline (a keep-alive away).
        sock = self.connection.sock or getattr(getattr(self.response.fp, "raw", None), "_sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.connection.close()


FAILURE_DIR = ROOT / "build" / "browser-failures"

# `make test` runs the files side by side (pytest-xdist, --dist loadfile --no-loadscope-reorder):
# the slowest first, so that the workers end together (seconds per file: BENCHMARKS.md, "CI time").
# Other files follow in name order, a cluster file (its own PostgreSQL and nodes) before the rest.
SLOWEST_FIRST = ["test_cluster.py", "test_schemathesis.py", "test_dashboard.py", "test_dashboard_layout.py", "test_liveness.py",
                 "test_client_presence.py", "test_permissions.py", "test_dashboard_queries.py"]


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.path.name
        if name in SLOWEST_FIRST:
            return SLOWEST_FIRST.index(name)
        return len(SLOWEST_FIRST) + (0 if name.startswith("test_cluster") else 1)

    items.sort(key=rank)  # stable: a file's tests keep their order


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test item, so fixtures can tell that a test failed."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"report_{report.when}", report)


@pytest.fixture(scope="session")
def chrome():
    """One headless Debian chromium for the session (chromedriver from chromium-driver, no downloads)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1600"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    driver.set_page_load_timeout(20)
    yield driver
    driver.quit()


@pytest.fixture
def browser(chrome, request):
    """The session's browser on a blank tab. On failure a screenshot and the console go to build/;
    a script error in the page (not a refused request: some tests want those) fails the test."""
    chrome.get("about:blank")
    chrome.get_log("browser")
    yield chrome
    logs = chrome.get_log("browser")
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        FAILURE_DIR.mkdir(parents=True, exist_ok=True)
        chrome.save_screenshot(str(FAILURE_DIR / f"{request.node.name}.png"))
        (FAILURE_DIR / f"{request.node.name}.console.txt").write_text("\n".join(map(str, logs)))
    chrome.get("about:blank")  # closes the page's streams before its server stops
    errors = [entry for entry in logs if entry["level"] == "SEVERE" and entry.get("source") != "network"]
    if errors and report is not None and report.passed:
        pytest.fail(f"the page logged errors: {errors}")
