"""deploy/compose.yaml (docker compose is not on every test machine): a cluster as documented."""

import re
from pathlib import Path

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def test_the_compose_file_runs_three_nodes_on_one_database_behind_the_balancer():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    nodes = {name: service for name, service in services.items() if name.startswith("node")}
    assert len(nodes) == 3
    environments = [service["environment"] for service in nodes.values()]
    assert len({environment["OBS_CLUSTER"] for environment in environments}) == 1, "one cluster URL"
    assert len({environment["OBS_NODE_ID"] for environment in environments}) == 3, "distinct node ids"
    assert all(environment["OBS_DATA_DIR"] == "" for environment in environments), "--cluster excludes --data-dir"
    assert all("OBS_TOKEN" in environment for environment in environments), "0.0.0.0 needs a token"
    host = re.match(r"postgres://[^@]+@([^:/]+)", environments[0]["OBS_CLUSTER"]).group(1)
    assert host in services and services[host]["image"].startswith("postgres:")
    upstream = re.findall(r"server (\S+):8080", (DEPLOY / "nginx.conf").read_text())
    assert sorted(upstream) == sorted(nodes), "the balancer spreads over every node"
    assert "proxy_buffering off" in (DEPLOY / "nginx.conf").read_text(), "event streams pass unbuffered"
