"""deploy/kubernetes/: the manifests are valid Kubernetes (schemas bundled with kubernetes-validate,
offline), and what they tell the server is what the server accepts: every OBS_* variable is one of
its options, the manifests' settings start it, the probes' paths answer without a token, a cluster
node's log lines are JSON and name the node, and the grace period covers preStop and the stop."""

import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from conftest import BINARY, ROOT, free_port
from postgres import Postgres

MANIFESTS = ROOT / "deploy" / "kubernetes"
SINGLE = MANIFESTS / "single-node.yaml"
CLUSTER = MANIFESTS / "cluster.yaml"
# The server's stop: 5 s for streams and answers waiting for the disk, 2 s for stuck streams, 2 s for
# abandoned answers (HTTPDaemon.stop), then the last checkpoint.
SERVER_STOP_SECONDS = 10
TOKEN = "manifest-check-token"


def documents(path):
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def workload(path):
    return next(d for d in documents(path) if d["kind"] in ("StatefulSet", "Deployment"))


def container(path):
    (only,) = workload(path)["spec"]["template"]["spec"]["containers"]
    return only


def plain_environment(path, **overrides):
    """The container's variables with literal values; those from Secrets or the pod left out."""
    environment = {item["name"]: item["value"] for item in container(path)["env"] if "value" in item}
    environment.update(overrides)
    return environment


def server_variables():
    """OBS_* for every option `obs-server --help` lists."""
    help_text = subprocess.run([str(BINARY), "--help"], capture_output=True, text=True, timeout=30).stdout
    return {"OBS_" + flag.upper().replace("-", "_") for flag in re.findall(r"--([a-z][a-z-]+)", help_text)}


@pytest.mark.parametrize("path", sorted(MANIFESTS.glob("*.yaml")), ids=lambda path: path.name)
def test_every_manifest_is_valid_kubernetes_offline_and_strict(path):
    version = kubernetes_validate.latest_version()
    for document in documents(path):
        kubernetes_validate.validate(document, version, strict=True)


@pytest.mark.parametrize("path", [SINGLE, CLUSTER], ids=lambda path: path.name)
def test_the_pods_run_as_the_images_user_on_a_read_only_root_with_the_token_from_a_secret(path):
    spec = workload(path)["spec"]["template"]["spec"]
    main = container(path)
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 10001, "the image's user (Dockerfile: USER 10001)"
    assert main["securityContext"]["readOnlyRootFilesystem"] is True
    assert main["securityContext"]["allowPrivilegeEscalation"] is False
    token = next(item for item in main["env"] if item["name"] == "OBS_TOKEN")
    assert "secretKeyRef" in token["valueFrom"]
    requests = main["resources"]["requests"]
    assert requests["cpu"] and requests["memory"]
    # preStop's sleep, then the server's own stop, must fit the grace period.
    pre_stop = main["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    assert spec["terminationGracePeriodSeconds"] >= int(pre_stop[1]) + SERVER_STOP_SECONDS


@pytest.mark.parametrize("path", [SINGLE, CLUSTER], ids=lambda path: path.name)
def test_ports_and_the_service_match_the_servers_port(path):
    main = container(path)
    (port,) = main["ports"]
    assert str(port["containerPort"]) == plain_environment(path)["OBS_PORT"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert main[probe]["httpGet"]["port"] == port["name"]
    service = next(d for d in documents(path) if d["kind"] == "Service")
    labels = workload(path)["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == port["name"]


@pytest.mark.parametrize("path", [SINGLE, CLUSTER, ROOT / "deploy" / "compose.yaml"], ids=lambda path: path.name)
def test_every_variable_the_deployments_set_is_an_option_of_the_server(path):
    text = path.read_text()
    names = set(re.findall(r"\b(OBS_[A-Z_]+)\b", text))
    assert names, "no OBS_ variables found"
    unknown = names - server_variables() - {"OBS_ALLOW_OPEN"}  # a flag without a value, read as 1/true/yes
    assert not unknown, f"{path.name} sets variables the server does not read: {unknown}"
    if path.suffix == ".yaml" and path.parent == MANIFESTS:
        for flag in re.findall(r"(--[a-z][a-z-]+)", json.dumps(container(path).get("args", []))):
            assert "OBS_" + flag[2:].upper().replace("-", "_") in server_variables(), flag


def test_the_single_node_volume_is_the_data_directory():
    statefulset = workload(SINGLE)
    mounts = {mount["name"]: mount["mountPath"] for mount in container(SINGLE)["volumeMounts"]}
    (claim,) = statefulset["spec"]["volumeClaimTemplates"]
    assert mounts[claim["metadata"]["name"]] == plain_environment(SINGLE)["OBS_DATA_DIR"]
    assert statefulset["spec"]["replicas"] == 1, "one server per data directory (it is locked)"


def test_the_cluster_runs_several_nodes_on_postgresql_from_a_secret_without_a_data_directory():
    deployment = workload(CLUSTER)
    assert deployment["spec"]["replicas"] >= 2
    environment = {item["name"]: item for item in container(CLUSTER)["env"]}
    assert "secretKeyRef" in environment["OBS_CLUSTER"]["valueFrom"]
    assert environment["OBS_DATA_DIR"]["value"] == "", "--cluster excludes --data-dir (the image sets /data)"
    assert environment["OBS_NODE_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert container(CLUSTER)["readinessProbe"]["httpGet"]["path"] == "/healthz", "ready: caught up"
    assert container(CLUSTER)["livenessProbe"]["httpGet"]["path"] != "/healthz", \
        "a database outage must not restart every node"


class ManifestServer:
    """The debug binary started with a manifest's variables (loopback, a free port, a temporary data
    directory, the Secret's token); its standard error is kept."""

    def __init__(self, environment):
        self.port = free_port()
        self.environment = {**os.environ, **environment, "OBS_HOST": "127.0.0.1", "OBS_PORT": str(self.port),
                            "OBS_TOKEN": TOKEN, "OBS_PUBLIC_DIR": str(ROOT / "Public")}
        self.errors = tempfile.TemporaryFile(mode="w+")
        self.process = subprocess.Popen([str(BINARY)], env=self.environment, stderr=self.errors)

    def get(self, path):
        """GET without a token: what a kubelet's probe sends."""
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def wait_ready(self, path, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"exited {self.process.returncode}: {self.log()}"
            try:
                if self.get(path) == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"{path} did not answer 200 in {timeout} s: {self.log()}")

    def stop(self, timeout):
        started = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            status = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
            raise
        return status, time.monotonic() - started

    def log(self):
        self.errors.seek(0)
        return self.errors.read()

    def json_lines(self):
        return [json.loads(line) for line in self.log().splitlines() if line.strip()]

    def close(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
        self.errors.close()


def probe_paths(path):
    main = container(path)
    return {main[probe]["httpGet"]["path"] for probe in ("startupProbe", "readinessProbe", "livenessProbe")}


def test_the_single_node_settings_start_the_server_and_its_probes_answer_without_a_token(tmp_path):
    data = tmp_path / "data"
    server = ManifestServer(plain_environment(SINGLE, OBS_DATA_DIR=str(data)))
    try:
        server.wait_ready("/healthz")
        for path in probe_paths(SINGLE):
            assert server.get(path) == 200, path
        spec = workload(SINGLE)["spec"]["template"]["spec"]
        pre_stop = int(container(SINGLE)["lifecycle"]["preStop"]["exec"]["command"][1])
        status, seconds = server.stop(timeout=spec["terminationGracePeriodSeconds"] - pre_stop)
        assert status == 0
        lines = server.json_lines()
        assert {"time", "level", "message", "logger"} <= lines[0].keys()
        assert any("listening" in line["message"] for line in lines)
        assert (data / "obs.sqlite").exists()
    finally:
        server.close()


def test_a_cluster_node_with_the_cluster_settings_becomes_ready_and_logs_json_lines_naming_it():
    postgres = Postgres(free_port())
    postgres.start()
    try:
        server = ManifestServer(plain_environment(CLUSTER, OBS_CLUSTER=postgres.url, OBS_NODE_ID="obs-server-7d9f-x2"))
        try:
            for path in sorted(probe_paths(CLUSTER)):
                server.wait_ready(path)
            spec = workload(CLUSTER)["spec"]["template"]["spec"]
            pre_stop = int(container(CLUSTER)["lifecycle"]["preStop"]["exec"]["command"][1])
            status, _ = server.stop(timeout=spec["terminationGracePeriodSeconds"] - pre_stop)
            assert status == 0
            lines = server.json_lines()
            assert lines and all(line["node"] == "obs-server-7d9f-x2" for line in lines), lines
        finally:
            server.close()
    finally:
        postgres.remove()
