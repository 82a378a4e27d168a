"""The container image, built as `make image` builds it (deploy/image.py) and run from the image:
/healthz, a write, an SSE record, the dashboard, a restart keeping /data, SIGTERM within 10 s.

Needs root (podman's storage, mounts, chroot) and podman; `make test-image` builds the static
binary first (.build-static) and installs podman and mmdebstrap."""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import REPORT

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "deploy"))
import image  # noqa: E402  (deploy/image.py)

BINARY = Path(os.environ.get("OBS_STATIC_BINARY", ROOT / ".build-static" / "release" / "obs-server"))
TAG = "localhost/obs-server:check"
TOKEN = "image-check-token"
MAX_BYTES = 150_000_000

if not shutil.which("podman"):
    pytest.skip("podman is not installed (and could not be): the image check is skipped", allow_module_level=True)
if os.geteuid() != 0:
    pytest.skip("the image check needs root (podman's storage, mounts, chroot)", allow_module_level=True)


def timed(label, step):
    started = time.monotonic()
    result = step()
    REPORT.append(f"{label}: {time.monotonic() - started:.1f} s")
    return result


@pytest.fixture(scope="module")
def built():
    """The image, built on the mmdebstrap base from the static binary; removed afterwards."""
    assert BINARY.exists(), f"{BINARY} is missing: make static"
    base = timed("base image (mmdebstrap, or its tarball reused)", lambda: image.make_base("podman", log=REPORT.append))
    timed("podman build", lambda: image.build("podman", BINARY, TAG, base, log=REPORT.append))
    size = image.size("podman", TAG)
    REPORT.append(f"image size: {size / 1e6:.1f} MB ({size:,} bytes; binary {BINARY.stat().st_size / 1e6:.1f} MB "
                  f"before strip)")
    yield {"size": size, "config": image.config("podman", TAG)}
    # The base's root file system stays in build/image/base.tar (a cache); the images go.
    for name in (TAG, image.LOCAL_BASE):
        subprocess.run(["podman", "rmi", "--force", name], capture_output=True, timeout=120)


def podman_run_works():
    """Whether `podman run` can start a container here (crun cannot set some rlimits on some
    machines); returns (works, why not)."""
    try:
        result = subprocess.run(["podman", "run", "--rm", "--network=host", TAG, "--help"], capture_output=True,
                                text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, "podman run did not finish in 60 s"
    if result.returncode == 0:
        return True, ""
    return False, (result.stderr.strip().splitlines() or ["exit %d" % result.returncode])[-1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ImageServer:
    """obs-server run from the image with a host directory as its /data volume and its root file
    system read-only: with `podman run --read-only`, or (mode "chroot") in the image's root file
    system, mounted read-only by podman, as the image's user."""

    def __init__(self, mode, config, data_dir):
        self.mode, self.config, self.data_dir = mode, config, data_dir
        self.port = free_port()
        self.name = f"obs-image-check-{os.getpid()}-{self.port}"
        self.process = None
        self.root = None
        self.log = Path(tempfile.mkstemp(prefix="obs-image-", suffix=".log")[1])

    # The test listens on loopback only (the image's default is 0.0.0.0 with a token).
    def environment(self):
        return {"OBS_HOST": "127.0.0.1", "OBS_PORT": str(self.port), "OBS_TOKEN": TOKEN}

    def start(self):
        if self.mode == "podman run":
            command = ["podman", "run", "--detach", "--name", self.name, "--network=host", "--read-only",
                       "--volume", f"{self.data_dir}:/data"]
            for name, value in self.environment().items():
                command += ["--env", f"{name}={value}"]
            subprocess.run(command + [TAG], check=True, capture_output=True, timeout=60)
        else:
            # The image's own root, mounted read-only by podman (as readOnlyRootFilesystem in
            # deploy/kubernetes), with the volume bound on /data.
            self.root = subprocess.run(["podman", "image", "mount", TAG], check=True, capture_output=True,
                                       text=True, timeout=60).stdout.strip()
            subprocess.run(["mount", "--bind", str(self.data_dir), f"{self.root}/data"], check=True, timeout=30)
            environment = dict(item.split("=", 1) for item in self.config.get("Env") or [])
            environment.update(self.environment())
            user = self.config.get("User") or "0"
            userspec = user if ":" in user else f"{user}:{user}"
            command = ["/usr/sbin/chroot", f"--userspec={userspec}", self.root] + self.config["Entrypoint"]
            with self.log.open("w") as log:
                self.process = subprocess.Popen(command, env=environment, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if self.request("GET", "/healthz")[0] == 200:
                    return self
            except OSError:
                pass
            if self.exited():
                break
            time.sleep(0.1)
        raise AssertionError(f"obs-server from the image did not answer /healthz: {self.output()}")

    def exited(self):
        if self.process:
            return self.process.poll() is not None
        result = subprocess.run(["podman", "inspect", "--format", "{{.State.Running}}", self.name],
                                capture_output=True, text=True, timeout=30)
        return result.stdout.strip() != "true"

    def pid(self):
        if self.process:
            return self.process.pid
        result = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}}", self.name], capture_output=True,
                                text=True, timeout=30)
        return int(result.stdout.strip())

    def output(self):
        if self.mode == "podman run":
            return subprocess.run(["podman", "logs", self.name], capture_output=True, text=True, timeout=30).stderr
        return self.log.read_text()

    def terminate(self, timeout=10):
        """SIGTERM; returns (exit status, seconds it took), or (None, timeout) if still running."""
        started = time.monotonic()
        if self.mode == "podman run":
            subprocess.run(["podman", "kill", "--signal", "TERM", self.name], capture_output=True, timeout=30)
            try:
                result = subprocess.run(["podman", "wait", self.name], capture_output=True, text=True,
                                        timeout=timeout)
                return int(result.stdout.strip()), time.monotonic() - started
            except subprocess.TimeoutExpired:
                return None, timeout
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout), time.monotonic() - started
        except subprocess.TimeoutExpired:
            return None, timeout

    def cleanup(self):
        """Kills what is left; removes the container, the mounts and the log."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        if self.mode == "podman run":
            subprocess.run(["podman", "rm", "--force", self.name], capture_output=True, timeout=60)
        if self.root:
            subprocess.run(["umount", f"{self.root}/data"], capture_output=True, timeout=30)
            subprocess.run(["podman", "image", "unmount", TAG], capture_output=True, timeout=60)
        self.log.unlink(missing_ok=True)

    def connection(self, timeout=10):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None):
        connection = self.connection()
        headers = {"Authorization": f"Bearer {TOKEN}"}
        data = None
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body), "application/json"
        try:
            connection.request(method, path, body=data, headers=headers)
            response = connection.getresponse()
            raw = response.read().decode()
        finally:
            connection.close()
        try:
            return response.status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return response.status, raw


@pytest.fixture(scope="module")
def mode(built):
    works, why = podman_run_works()
    if works:
        REPORT.append("run with: podman run --read-only, /data a bind-mounted directory")
        return "podman run"
    REPORT.append(f"run with: chroot into the image's root (podman image mount, read-only), as user "
                  f"{built['config'].get('User')}, /data a bind-mounted directory: "
                  f"podman run fails here ({why})")
    return "chroot"


@pytest.fixture
def volume():
    """A host directory as the /data volume, owned by the image's user as a fresh volume would be."""
    path = Path(tempfile.mkdtemp(prefix="obs-image-data-"))
    os.chown(path, 10001, 10001)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def servers(built, mode, volume):
    started = []

    def make():
        server = ImageServer(mode, built["config"], volume)
        started.append(server)
        return server

    yield make
    for server in started:
        server.cleanup()


def test_the_image_is_under_150_mb_and_runs_as_a_user_with_the_dashboard_and_data_on_the_volume(built):
    assert built["size"] < MAX_BYTES, f"{built['size'] / 1e6:.1f} MB"
    config = built["config"]
    assert config["User"] == "10001"
    assert config["Entrypoint"] == ["/usr/local/bin/obs-server"]
    environment = dict(item.split("=", 1) for item in config["Env"])
    assert environment["OBS_DATA_DIR"] == "/data" and environment["OBS_HOST"] == "0.0.0.0"
    assert "8080/tcp" in config["ExposedPorts"] and "/data" in config["Volumes"]


def test_the_image_serves_health_writes_streams_and_the_dashboard_and_keeps_data_across_a_restart(servers):
    started = time.monotonic()
    server = servers().start()
    REPORT.append(f"start to /healthz: {time.monotonic() - started:.1f} s")
    uid = [line for line in Path(f"/proc/{server.pid()}/status").read_text().splitlines() if line.startswith("Uid:")]
    assert uid[0].split()[1] == "10001", uid
    assert server.request("GET", "/healthz") == (200, {"status": "ok"})
    status, page = server.request("GET", "/")
    assert status == 200 and "<title" in page.lower()
    assert server.request("POST", "/v1/objects", {"id": "acct", "values": {"balance": 1}})[0] == 201

    status, observer = server.request("POST", "/v1/observers", {})
    assert status == 201
    status, _ = server.request("POST", f"/v1/observers/{observer['id']}/observations",
                               {"object": "acct", "keyPath": "balance", "options": ["new"]})
    assert status in (200, 201)
    records = []
    stream = server.connection(timeout=15)
    stream.request("GET", f"/v1/observers/{observer['id']}/events",
                   headers={"Accept": "text/event-stream", "Authorization": f"Bearer {TOKEN}"})
    response = stream.getresponse()
    assert response.status == 200

    def read():
        try:
            for line in iter(response.readline, b""):
                if line.startswith(b"data: "):
                    records.append(json.loads(line[6:]))
        except (OSError, ValueError, http.client.HTTPException, AttributeError):
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert server.request("PUT", "/v1/objects/acct/values/balance", {"value": 2})[0] == 200
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not any(record.get("new") == 2 for record in records):
        time.sleep(0.05)
    assert any(record.get("keyPath") == "balance" and record.get("new") == 2 for record in records), records

    # SIGTERM with the stream open: the stream is closed, the server exits 0 within 10 s.
    status, seconds = server.terminate(timeout=10)
    REPORT.append(f"SIGTERM to exit (one stream open): {seconds:.1f} s, exit status {status}")
    assert status == 0, server.output()
    reader.join(timeout=5)
    stream.close()
    assert "stopped" in server.output()

    restarted = servers().start()
    assert restarted.request("GET", "/v1/objects/acct/values/balance")[1]["value"] == 2, "kept on /data"
    status, seconds = restarted.terminate(timeout=10)
    assert status == 0


def test_the_image_refuses_to_listen_on_every_interface_without_a_token(built, mode, volume):
    """The image's default host is 0.0.0.0: without OBS_TOKEN it must not start."""
    server = ImageServer(mode, built["config"], volume)
    server.environment = lambda: {"OBS_PORT": str(server.port)}
    try:
        with pytest.raises(AssertionError):
            server.start()
        assert "refusing to listen on 0.0.0.0 without a token" in server.output()
    finally:
        server.cleanup()
