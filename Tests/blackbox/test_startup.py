"""Start and stop as an operator sees them: a server that has nothing to report logs nothing."""

import pytest


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_server_that_starts_serves_and_stops_cleanly_logs_no_warning(server_factory, threads):
    # A pinned container (one CPU) runs one thread: libmicrohttpd once warned there at every start.
    server = server_factory("--threads", threads, "--log-level", "warning").start()  # the last --log-level counts
    status, _ = server.request("GET", "/healthz")
    assert status == 200
    server.process.terminate()
    server.process.wait(timeout=10)
    log = server.process.stderr.read()
    assert server.process.returncode == 0
    assert log == "", f"obs-server --threads {threads} --log-level warning wrote: {log}"
