"""schemathesis against the running server, from its own /openapi.json: no 5xx, nothing off-schema."""

import os
import subprocess
from pathlib import Path

SCHEMATHESIS = Path(os.environ.get("VIRTUAL_ENV", Path(__file__).resolve().parents[2] / ".venv")) / "bin" / "schemathesis"


def test_schemathesis_finds_nothing(server_factory, tmp_path):
    server = server_factory(data_dir=tmp_path / "data").start()
    base = [
        str(SCHEMATHESIS), "run", f"{server.url}/openapi.json", "--url", server.url,
        "--checks", "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance",
        "--exclude-tag", "streams",  # endless SSE bodies: covered by the Swift stream tests
        "--max-examples", "25", "--seed", "1", "--workers", "1",  # CPython 3.11 ast.parse is not thread-safe (hypothesis)
    ]
    # schemathesis 4.x's coverage phase raises an internal "inconsistent results" error while
    # generating bodies for POST /v1/notifications (not an answer of ours): that operation gets
    # the fuzzing and stateful phases only.
    runs = [
        ["--phases", "fuzzing,stateful"],
        ["--phases", "coverage", "--exclude-path", "/v1/notifications"],
    ]
    for phases in runs:
        result = subprocess.run(base + phases, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
        assert server.process.poll() is None, "the server died under schemathesis"
