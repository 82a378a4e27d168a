"""A throw-away PostgreSQL server on a loopback port, for the cluster tests and the cluster bench
(Debian's `postgresql` package; `make test` and `make bench` install it)."""

import glob
import os
import signal
import shutil
import subprocess
import tempfile
from pathlib import Path


def postgres_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed (make test installs the postgresql package)")
    return Path(found[-1]).parent


class Postgres:
    """A throw-away PostgreSQL cluster owned by the `postgres` user when run as root (initdb refuses root)."""

    def __init__(self, port, cpus=None):
        self.port = port
        # `cpus`: a taskset list the server is pinned to (the bench keeps it off the node's CPU).
        self.pin = ["taskset", "-c", cpus] if cpus else []
        self.directory = Path(tempfile.mkdtemp(prefix="obs-pg-"))
        self.data = self.directory / "data"
        self.bin = postgres_bin()
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.as_user:
            shutil.chown(self.directory, "postgres")

    @property
    def url(self):
        return f"postgres://obs@127.0.0.1:{self.port}/postgres"

    def start(self):
        if not self.data.exists():
            subprocess.run(self.as_user + [str(self.bin / "initdb"), "-D", str(self.data), "--no-sync", "-A", "trust",
                                           "-U", "obs"], check=True, stdout=subprocess.DEVNULL)
        options = f"-p {self.port} -k {self.directory} -c listen_addresses=127.0.0.1 -c max_connections=100"
        subprocess.run(self.pin + self.as_user + [str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l",
                                       str(self.directory / "log"), "-w", "-t", "30", "start"],
                       check=True, stdout=subprocess.DEVNULL)
        return self

    def stop(self, mode="fast"):
        subprocess.run(self.as_user + [str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def sql(self, statement):
        """Runs SQL through psql; returns its unaligned output."""
        result = subprocess.run(["psql", self.url, "-XAtq", "-c", statement], capture_output=True, text=True,
                                check=True)
        return result.stdout.strip()

    def processes(self):
        """The postmaster's PID and its children's (every server process of this cluster)."""
        postmaster = int((self.data / "postmaster.pid").read_text().split()[0])
        children = subprocess.run(["pgrep", "-P", str(postmaster)], capture_output=True, text=True).stdout.split()
        return [postmaster] + [int(pid) for pid in children]

    def pause(self):
        """Stops every server process (SIGSTOP): connections stay open and nothing answers."""
        self.paused = self.processes()
        for pid in self.paused:
            os.kill(pid, signal.SIGSTOP)

    def resume(self):
        for pid in getattr(self, "paused", []):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.paused = []

    def remove(self):
        self.resume()
        self.stop("immediate")
        shutil.rmtree(self.directory, ignore_errors=True)
