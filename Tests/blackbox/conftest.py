"""Black-box tests: the real obs-server binary, started as a process, driven over HTTP."""

import http.client
import json
import os
import signal
import socket
import subprocess
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

    def __init__(self, *args, data_dir=None, token=None):
        self.args = list(args)
        self.data_dir = data_dir
        self.token = token
        self.port = free_port()
        self.process = None

    def start(self, timeout=15):
        command = [str(BINARY), "--port", str(self.port), "--public-dir", str(ROOT / "Public"), "--log-level", "error"]
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

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def connection(self, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

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
