"""A real cluster for the black-box tests: a private PostgreSQL on a free loopback port, obs-server
nodes started with --cluster, and nginx as a round-robin load balancer in front of them. Everything
is started here and stopped by PID; the Debian packages (postgresql, nginx) come from `make test`."""

import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

# `ok` is not used here: the cluster tests import it from this module.
from conftest import EventStreamReader, ServerProcess, free_port, ok, wait_until  # noqa: F401
from postgres import Postgres


class LoadBalancer:
    """nginx, round robin over the nodes, unbuffered (event streams pass through as they come)."""

    def __init__(self, nodes):
        self.port = free_port()
        self.directory = Path(tempfile.mkdtemp(prefix="obs-nginx-"))
        servers = "\n".join(f"        server 127.0.0.1:{node.port} max_fails=0;" for node in nodes)
        (self.directory / "nginx.conf").write_text(f"""
worker_processes 1;
daemon off;
pid {self.directory}/nginx.pid;
error_log {self.directory}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {self.directory}/body;
    proxy_temp_path {self.directory}/proxy;
    fastcgi_temp_path {self.directory}/fastcgi;
    uwsgi_temp_path {self.directory}/uwsgi;
    scgi_temp_path {self.directory}/scgi;
    upstream obs {{
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{self.port};
        location / {{
            proxy_pass http://obs;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_next_upstream error timeout;
        }}
    }}
}}
""")
        self.process = None
        self.host = "127.0.0.1"
        self.token = None

    def start(self):
        self.process = subprocess.Popen(["nginx", "-p", str(self.directory), "-c", str(self.directory / "nginx.conf")],
                                        stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                status, _ = ServerProcess.request(self, "GET", "/healthz")
                if status == 200:
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("nginx did not come up")

    # The balancer speaks HTTP like a node: reuse the node's client methods.
    connection = ServerProcess.connection
    request = ServerProcess.request

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)


class Cluster:
    """PostgreSQL, `size` nodes (n1, n2, …) and the balancer."""

    def __init__(self, size=3, node_args=(), token=None):
        self.postgres = Postgres(free_port()).start()
        self.node_args = list(node_args)
        self.token = token
        self.nodes = [self.node(f"n{index + 1}") for index in range(size)]
        for node in self.nodes:
            node.start(timeout=30)
        self.balancer = LoadBalancer(self.nodes).start()
        self.balancer.token = token

    def node(self, name):
        return ServerProcess("--cluster", self.postgres.url, "--node-id", name, "--heartbeat-interval", "1",
                             *self.node_args, token=self.token)

    def restart(self, index):
        """Starts node `index` again on its port, as the same node id."""
        old = self.nodes[index]
        node = self.node(old.args[3])
        node.port = old.port
        self.nodes[index] = node
        return node.start(timeout=30)

    def stop(self):
        self.balancer.stop()
        for node in self.nodes:
            node.stop()
        self.postgres.remove()


def RawStream(server, path, last_event_id=None):
    """An event stream (its `raw` events keep the data as sent), resumed after `last_event_id`."""
    if last_event_id is not None:
        path += ("&" if "?" in path else "?") + f"lastEventId={last_event_id}"
    return EventStreamReader(server, path)


def kill_and_resume(cluster, path, write, chance):
    """Reads `path` on node 1 and on node 3 (the control) while `write(stop)` runs in a thread, kills
    node 1 with SIGKILL at a random moment, resumes its stream on node 2 after the last id it had,
    and checks that the two parts together have no gap, no duplicate, and are byte-identical to the
    control. Restarts node 1; returns the control's events (`(event, id, data)`, those with ids)."""
    a, b, _ = cluster.nodes
    on_a, control = RawStream(a, path), RawStream(cluster.nodes[2], path)
    stop = threading.Event()
    writer = threading.Thread(target=write, args=(stop,))
    writer.start()
    time.sleep(chance.uniform(0.5, 1.5))
    a.kill()
    got = list(on_a.raw)
    last_id = max((item[1] for item in got if item[1] is not None), default=0)
    resumed = RawStream(b, path, last_event_id=last_id)
    time.sleep(1.0)
    stop.set()
    writer.join()
    wait_until(lambda: control.raw and max(i or 0 for _, i, _ in control.raw) ==
               max(i or 0 for _, i, _ in resumed.raw + [("", last_id, "")]), timeout=15,
               message="the resumed stream catching up with the control stream")
    combined = [item for item in got if item[1] is not None and item[1] <= last_id] + \
               [item for item in resumed.raw if item[1] is not None]
    ids = [item[1] for item in combined]
    assert ids == list(range(1, len(ids) + 1)), "no gap, no duplicate"
    assert last_id > 0 and len(ids) > last_id, "events before the kill and after the resume"
    control_events = [item for item in control.raw if item[1] is not None]
    assert combined == control_events, "byte-identical to a stream that never moved"
    for stream in (on_a, control, resumed):
        stream.close()
    cluster.restart(0)
    return control_events
