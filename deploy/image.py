#!/usr/bin/env python3
"""Builds the container image from a binary built on this machine (`make image`, and the image
check in `make test`): the Dockerfile's `prebuilt` target, which is its runtime stage around
build/image/obs-server.

With podman or docker, whichever is installed (podman first). The base is `debian:bookworm-slim`
when the engine has it or can pull it; otherwise (no registry, as on the project's machines) a
Debian bookworm made from Debian's packages with mmdebstrap, imported as localhost/obs-base:bookworm.

    python3 deploy/image.py --binary .build-static/release/obs-server --tag obs-server
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "build" / "image"
LOCAL_BASE = "localhost/obs-base:bookworm"
REGISTRY_BASE = "docker.io/library/debian:bookworm-slim"
# A base root file system older than this is made again (security updates); younger ones are reused.
BASE_MAX_AGE = 7 * 24 * 3600

# Slimmer than debian:bookworm-slim: the Essential packages, apt and passwd (useradd), merged /usr
# without the usrmerge package (which would bring perl), no documentation, manuals or translations,
# no time zones (the server logs UTC), no glibc iconv modules (8 MB of character sets nothing
# here converts): the image must stay under 150 MB with a 61 MB binary.
# The apt options carry over this machine's (its mirror is a dated snapshot), and keep no
# package caches or downloaded packages in a layer, as Debian's own container images do.
MMDEBSTRAP = [
    "mmdebstrap", "--variant=essential", "--include=apt,passwd", "--quiet", "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr",
    "--aptopt=Acquire::Check-Valid-Until \"false\"", "--aptopt=Acquire::Check-Date \"false\"",
    "--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/locale/*",
    "--dpkgopt=path-exclude=/usr/share/info/*", "--dpkgopt=path-exclude=/usr/lib/x86_64-linux-gnu/gconv/*",
    "--aptopt=Dir::Cache::pkgcache \"\"", "--aptopt=Dir::Cache::srcpkgcache \"\"",
    "--aptopt=Acquire::Languages \"none\"", "--aptopt=Acquire::GzipIndexes \"true\"",
    "--aptopt=DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true\"; }",
    "--customize-hook=rm -rf \"$1\"/var/lib/apt/lists/* \"$1\"/var/cache/apt/*",
    "bookworm",
]


def engine_command():
    """podman, else docker (None: neither)."""
    for name in ("podman", "docker"):
        if shutil.which(name):
            return name
    return None


def run(command, timeout, **kwargs):
    return subprocess.run(command, check=True, timeout=timeout, **kwargs)


def image_exists(engine, name):
    return subprocess.run([engine, "image", "inspect", name], capture_output=True, timeout=60).returncode == 0


def make_base(engine, log=print):
    """A Debian bookworm base from Debian's packages (mmdebstrap), imported as LOCAL_BASE. The
    root file system is kept in build/image/base.tar and reused while younger than BASE_MAX_AGE
    (a cache: a missing or old one is made again). Returns the image's name."""
    WORK.mkdir(parents=True, exist_ok=True)
    tarball = WORK / "base.tar"
    started = time.monotonic()
    if tarball.exists() and time.time() - tarball.stat().st_mtime < BASE_MAX_AGE:
        made = "reused from build/image/base.tar"
    else:
        if not shutil.which("mmdebstrap"):
            sys.exit("mmdebstrap is not installed (apt-get install mmdebstrap), and no debian:bookworm-slim image")
        partial = WORK / "base.tar.partial"
        result = subprocess.run(MMDEBSTRAP + ["--format=tar", str(partial)], capture_output=True, text=True,
                                timeout=600)
        if result.returncode != 0:
            sys.exit(f"mmdebstrap failed:\n{result.stderr[-4000:]}")
        partial.rename(tarball)
        made = "made with mmdebstrap from Debian's packages"
    run([engine, "import", "--change", "CMD [\"/bin/bash\"]", str(tarball), LOCAL_BASE], timeout=300,
        capture_output=True)
    log(f"base: {LOCAL_BASE} {made} in {time.monotonic() - started:.1f} s")
    return LOCAL_BASE


def pick_base(engine, log=print):
    """debian:bookworm-slim where the engine has it or can pull it, else the mmdebstrap base."""
    if image_exists(engine, REGISTRY_BASE):
        return REGISTRY_BASE
    try:
        pulled = subprocess.run([engine, "pull", REGISTRY_BASE], capture_output=True, timeout=120).returncode == 0
    except subprocess.TimeoutExpired:
        pulled = False
    if pulled:
        return REGISTRY_BASE
    log(f"base: {REGISTRY_BASE} cannot be pulled here; making one with mmdebstrap")
    return make_base(engine, log)


def build(engine, binary, tag, base, log=print):
    """Builds the `prebuilt` target around `binary` (stripped on the way in); returns the seconds
    the engine's build took."""
    WORK.mkdir(parents=True, exist_ok=True)
    staged = WORK / "obs-server"
    staged.unlink(missing_ok=True)
    run(["strip", "-o", str(staged), str(binary)], timeout=120)
    command = [engine, "build", "--target", "prebuilt", "--build-arg", f"BASE={base}", "--tag", tag]
    if engine == "podman":
        # chroot isolation: building needs no container runtime (crun cannot set RLIMIT_NPROC on
        # some machines); never pull the base, it is local by now; the docker format keeps HEALTHCHECK
        # (OCI images have none).
        command += ["--isolation=chroot", "--pull=never", "--format=docker"]
    started = time.monotonic()
    run(command + [str(ROOT)], timeout=900, cwd=ROOT, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    log(f"image: {tag} built with {engine} on {base} in {seconds:.1f} s")
    return seconds


def size(engine, tag):
    """The image's size in bytes, uncompressed (every layer, the base's included)."""
    result = run([engine, "image", "inspect", "--format", "{{.Size}}", tag], timeout=60, capture_output=True,
                 text=True)
    return int(result.stdout.strip())


def config(engine, tag):
    """The image's configuration (Entrypoint, User, Env, WorkingDir, ...)."""
    result = run([engine, "image", "inspect", "--format", "{{json .Config}}", tag], timeout=60,
                 capture_output=True, text=True)
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=str(ROOT / ".build-static" / "release" / "obs-server"))
    parser.add_argument("--tag", default="obs-server")
    parser.add_argument("--engine", default=os.environ.get("ENGINE") or engine_command())
    parser.add_argument("--base", default=os.environ.get("BASE") or None,
                        help="base image (default: debian:bookworm-slim, or one made with mmdebstrap)")
    parser.add_argument("--mmdebstrap", action="store_true", help="always use the mmdebstrap base")
    parser.add_argument("--base-only", action="store_true",
                        help="only make the mmdebstrap base (build/image/base.tar, imported), no binary needed")
    arguments = parser.parse_args()
    if not arguments.engine:
        sys.exit("neither podman nor docker is installed (apt-get install podman)")
    if arguments.base_only:
        make_base(arguments.engine)
        return
    base = arguments.base or (make_base(arguments.engine) if arguments.mmdebstrap else pick_base(arguments.engine))
    build(arguments.engine, arguments.binary, arguments.tag, base)
    print(f"image: {arguments.tag}, {size(arguments.engine, arguments.tag) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
