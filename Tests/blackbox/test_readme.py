"""The README's curl walk-through, run top to bottom exactly as written, against a fresh server.

Every request must succeed (2xx) except the ones the README shows failing, and every output the
README quotes in a comment (`# {...}`, `# data: …`, `# → …`) must appear in what the commands
printed ("…" and "..." stand for text the README leaves out).
"""

import re
import subprocess

from conftest import ROOT

SECTION = ("## A walk through with curl", "## Configuration")
QUOTED = re.compile(r"#\s*(?:→\s*|(?=[{\[\"0-9])|(?=data: )|(?=id: )|(?=event: ))(.+)$")


def walk_through():
    text = (ROOT / "README.md").read_text()
    section = text[text.index(SECTION[0]):text.index(SECTION[1])]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def quoted_outputs(blocks):
    """The fragments of output the README quotes in comments."""
    fragments = []
    for line in "\n".join(blocks).splitlines():
        match = QUOTED.search(line)
        if match is None:
            continue
        fragments += [part.strip(" ,") for part in re.split(r"…|\.\.\.", match.group(1)) if part.strip(" ,")]
    return fragments


def test_the_readme_walk_through_runs_as_written(server_factory, tmp_path):
    server = server_factory().start()
    blocks = walk_through()
    assert len(blocks) >= 3, "the walk-through's code blocks were not found"
    # A curl that reports each request's status, and nothing else changed: exec keeps `$!` the real
    # curl, so the walk-through's own `kill $STREAM` works as it does for a reader. Each curl writes
    # its stderr to a file of its own, named by when it started: two curls ending at once (a stream
    # and the request that ends it) would interleave their lines on one shared stderr.
    wrapper = tmp_path / "bin" / "curl"
    wrapper.parent.mkdir()
    logs = tmp_path / "curl-stderr"
    logs.mkdir()
    wrapper.write_text("#!/bin/sh\nexec /usr/bin/curl --write-out '%{stderr}STATUS %{http_code} %{method} %{url}\\n' "
                       f"\"$@\" 2>\"{logs}/$(date +%s%N)-$$\"\n")
    wrapper.chmod(0o755)
    script = "\n".join(blocks).replace("localhost:8080", f"localhost:{server.port}")
    result = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                            env={"PATH": f"{wrapper.parent}:/usr/bin:/bin", "HOME": str(tmp_path)})
    stderr = result.stderr + "".join(path.read_text() for path in sorted(logs.iterdir()))
    statuses = [line.split(" ", 3)[1:] for line in stderr.splitlines() if line.startswith("STATUS ")]
    others = [line for line in stderr.splitlines() if not line.startswith("STATUS ")]
    assert not others, f"the walk-through printed errors: {others}"
    assert len(statuses) >= 25, stderr
    failed = [(code, method, url) for code, method, url in statuses if not code.startswith("2")]
    assert failed == [
        ("400", "GET", f"localhost:{server.port}/v1/objects/rnd/values/boss.nmae"),
        ("403", "GET", f"localhost:{server.port}/v1/objects/grace"),  # outside the scoped token's scopes
        ("401", "GET", f"localhost:{server.port}/v1/objects/alan"),  # the token, revoked
        ("404", "GET", f"localhost:{server.port}/v1/objects/here-ada"),  # deleted with its owner
        ("412", "POST", f"localhost:{server.port}/v1/transactions"),  # the transfer that would overdraw
    ], failed
    missing = [fragment for fragment in quoted_outputs(blocks) if fragment not in result.stdout]
    assert not missing, f"outputs the README quotes but the commands did not print: {missing}"
