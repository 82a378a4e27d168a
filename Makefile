# ObsServer — the two commands: `make run` and `make test`. Both install what
# is missing (system packages with apt-get) before building.

SHELL      := /bin/bash
.SHELLFLAGS := -eo pipefail -c
SWIFT      ?= swift
HOST       ?= 127.0.0.1
PORT       ?= 8080
TSAN_DIR   := .build-tsan
STATIC_DIR := .build-static
IMAGE      ?= obs-server
VENV       := .venv
DATA_DIR   ?= data
# `make test` runs its phases side by side (make -j, see `test`): each phase's output is prefixed with
# its name and its time recorded for the table at the end (.ci/phase, .ci/phases). Alone, a target
# runs as it is.
phase       = $(if $(ALL_DEPS),.ci/phase $(1))
# A test phase: under `make test` its failure is recorded and the phases ordered after it still run.
test_phase  = $(if $(ALL_DEPS),.ci/phase --go-on $(1))
# The builds no test waits for yet (release, ThreadSanitizer, the image's base) take only the CPU the
# tests leave: SCHED_IDLE, which the compiler processes inherit (swift-build starts them at nice 0
# whatever its own nice is).
LOW        := chrt --idle 0
# Black-box workers (pytest-xdist, a file per worker at a time: a file's module fixtures stay whole).
BLACKBOX_WORKERS ?= 3
# Release builds are optimised across modules at link time: the HTTP layer's calls into the core are
# inlined and specialised there (fewer instructions per write, BENCHMARKS.md "Issue 46, fifth session").
RELEASE    := -c release --experimental-lto-mode=full

.PHONY: run build release resolve static image deps deps-tests deps-venv deps-browser deps-blackbox deps-cluster deps-bench deps-image deps-node deps-valgrind test test-phases build-tests tsan-build image-base test-swift test-js test-blackbox test-image test-bench-smoke test-tsan lint bench profile deps-perf bench-peers bench-cluster bench-queries bench-scoped bench-presence bench-webhooks bench-fanout floor soak callgrind clean help

help:
	@echo "make run    - install what is missing, build, start on http://$(HOST):$(PORT)"
	@echo "make test   - install what is missing, then every test (lint, swift test, JavaScript, black-box, image, bench smoke,"
	@echo "             thread sanitizer), side by side where they can; a table of each phase's seconds at the end"
	@echo "make bench  - release build, then the load tests in bench/ (table in BENCHMARKS.md)"
	@echo "make bench-queries - release build, then W5/W6 and memory of queries (BENCHMARKS.md, issue 35)"
	@echo "make bench-scoped - release build, then W1 and W2 with scoped tokens against the admin token (issue 36)"
	@echo "make bench-presence - release build, then joins/leaves of a 1,000-watcher room against W2 (issue 37)"
	@echo "make bench-webhooks - release build, then W8: 100 delivering observers against SSE, and beside a dead URL (issue 45)"
	@echo "make soak   - release build, then 30 minutes of mixed load; RSS over time into BENCHMARKS.md"
	@echo "make callgrind - release build, then instructions per PUT and per W2 write under callgrind"
	@echo "make bench-fanout - release build, then instructions, system calls and wake-ups per W2 delivery, ObsServer and nchan (issue 46)"
	@echo "make floor  - the bare libmicrohttpd server doing ObsServer's fan-out (issue 46): build/floor/mhd_fanout"
	@echo "make profile - where a shared-bench workload's time goes, sampled with perf (WORKLOAD=w1|w2|w3; issue 46)"
	@echo "make image  - the container image (podman or docker) around a release build made here (docs/DEPLOY.md)"

## System packages: checked (pkg-config, command -v) and, when missing, installed with apt-get by
## .ci/packages, which runs at most one `apt-get update` and one `apt-get install` per call.
## Under `make test` the test packages are all installed by one call (deps-tests) while Swift builds;
## the deps-* targets then find them there.
deps:
	@$(call phase,deps) .ci/packages build $(if $(ALL_DEPS),venv)

deps-tests: deps
	@$(call phase,deps-tests) .ci/packages node blackbox browser cluster image bench

## The cluster tests start a private PostgreSQL and nginx as the load balancer (Debian's packages).
deps-cluster: $(if $(ALL_DEPS),deps-tests)
	@.ci/packages cluster

## Python tools for the black-box tests, in a virtual environment of our own.
deps-venv: $(if $(ALL_DEPS),deps)
	@.ci/packages venv

$(VENV)/.ready: Tests/blackbox/requirements.txt | deps-venv
	@$(call phase,venv) bash -c 'python3 -m venv $(VENV) && \
	  $(VENV)/bin/pip install -q --disable-pip-version-check -r Tests/blackbox/requirements.txt'
	@touch $@

## The black-box suites also run the README's curl walk-through (curl, jq), mount a small tmpfs
## (a full disk) and make network namespaces (a vanished client): iproute2 and util-linux's mount.
deps-blackbox: $(if $(ALL_DEPS),deps-tests)
	@.ci/packages blackbox

## The browser tests drive Debian's chromium through its chromedriver (never a downloaded one).
deps-browser: $(if $(ALL_DEPS),deps-tests)
	@.ci/packages browser

## The JavaScript tests run under Node's own test runner: Debian's nodejs (18 or later), no npm package;
## the client's types (Public/client/*.d.ts) are compiled by Debian's TypeScript (node-typescript).
deps-node: $(if $(ALL_DEPS),deps-tests)
	@.ci/packages node

## The image check builds with Debian's podman (no daemon; chroot isolation) on a Debian base made from
## Debian's packages with mmdebstrap (no image registry needed). Where podman cannot be installed, the
## check says so and is skipped.
deps-image: $(if $(ALL_DEPS),deps-tests)
	@.ci/packages image

deps-bench: deps $(if $(ALL_DEPS),deps-tests)
	@.ci/packages bench

## callgrind and callgrind_control (Debian's valgrind); objcopy (binutils) strips the debug sections valgrind cannot read;
## strace (bench-fanout's system calls).
deps-valgrind:
	@.ci/packages valgrind

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build $(RELEASE)

## The packages the three builds share (Package.resolved is not committed), fetched once before they
## start side by side under `make test`.
resolve: deps
	@$(call phase,resolve) $(SWIFT) package resolve

## The binary the image carries: release, the Swift runtime linked in (the runtime image has no Swift).
static: $(if $(ALL_DEPS),resolve,deps)
	@$(call phase,static) $(if $(ALL_DEPS),$(LOW)) $(SWIFT) build $(RELEASE) --static-swift-stdlib \
	  --scratch-path $(STATIC_DIR)

## The container image (IMAGE=obs-server) with podman or docker, whichever is installed (podman when
## neither is), on debian:bookworm-slim or, without a registry, a base made with mmdebstrap.
image: static
	@if ! command -v podman >/dev/null && ! command -v docker >/dev/null; then $(MAKE) deps-image; fi
	@if command -v podman >/dev/null && ! command -v mmdebstrap >/dev/null; then $(MAKE) deps-image; fi
	python3 deploy/image.py --binary $(STATIC_DIR)/release/obs-server --tag $(IMAGE)

run: release
	.build/release/obs-server --host $(HOST) --port $(PORT) --public-dir Public --data-dir $(DATA_DIR) $(ARGS)

## Tests: format lint, no warnings in our own code, all Swift suites (in memory), the JavaScript suites
## (node --test), the black-box suites (SIGKILL, schemathesis, browser) against the binary, the image, the
## bench smoke, then all Swift suites again under ThreadSanitizer with a data directory per test server
## (OBS_TEST_DURABLE=1; OBS_TSAN=1 swaps Mutex for a lock TSan can see: see Sources/ObservationCore/Locked.swift).
## The phases run side by side as soon as what they need is there (make -j, ALL_DEPS=1: one install of
## the test packages, the release and TSan builds at SCHED_IDLE, the suites one after the other: see
## test-tsan); on a failure the others go on (--keep-going, test phases --go-on), and the table of
## every phase's start, seconds and result comes last either way (BENCHMARKS.md, "CI time").
TEST_PHASES := deps resolve venv lint build deps-tests swift-test js black-box static image-base image bench-smoke \
  tsan-build tsan
test:
	@rm -rf build/phases && mkdir -p build/phases && date +%s.%N >build/phases/.began
	@status=0; $(MAKE) --no-print-directory -j16 --keep-going ALL_DEPS=1 test-phases || status=$$?; \
	  python3 .ci/phases build/phases $(TEST_PHASES) || status=1; exit $$status

test-phases: lint test-swift test-js test-blackbox test-image test-bench-smoke test-tsan

lint: $(VENV)/.ready
	@$(call test_phase,lint) bash -eo pipefail -c '$(SWIFT) format lint --strict -r Sources Tests; $(VENV)/bin/hadolint Dockerfile'

## The debug build of every target, the tests' included (a warning in our own code fails it): what
## `swift test` runs and the black-box tests and the bench smoke start (.build/debug/obs-server).
build-tests: $(if $(ALL_DEPS),resolve,deps)
	@mkdir -p build
	@$(call phase,build) bash -eo pipefail -c '$(SWIFT) build --build-tests 2>&1 | tee build/build.log; \
	  if grep -E "^/.*/(Sources|Tests)/.*: warning:" build/build.log; then echo "warnings in project code"; exit 1; fi'

test-swift: build-tests
	@$(call test_phase,swift-test) $(SWIFT) test --skip-build

## The browser code's wire module and client (Public/client) under `node --test`. The files are named, not
## the directory: Node 21 and later take the arguments as globs and would run the bare directory as a file.
test-js: deps-node
	@$(call test_phase,js) bash -c 'node --test Tests/js/*.test.mjs && tsc -p Tests/js/types'

## The files side by side, one file per worker at a time (each file's servers, PostgreSQL, nginx,
## namespaces and mounts are its own; one chromium per worker).
test-blackbox: $(VENV)/.ready deps-browser deps-blackbox deps-cluster build-tests $(if $(ALL_DEPS),| test-bench-smoke)
	@$(call test_phase,black-box) $(VENV)/bin/pytest -q -n $(BLACKBOX_WORKERS) --dist loadfile --no-loadscope-reorder Tests/blackbox

## The image's base (mmdebstrap: a minute of downloads and unpacking) made while Swift builds; the image
## check finds it in build/image/base.tar.
image-base: deps-image
	@$(call phase,image-base) bash -c 'if command -v podman >/dev/null && command -v mmdebstrap >/dev/null; then \
	  $(if $(ALL_DEPS),$(LOW)) python3 deploy/image.py --base-only; fi'

## The image built by podman from the static binary and run from the image (Tests/image).
test-image: $(VENV)/.ready deps-image static $(if $(ALL_DEPS),image-base)
	@$(call test_phase,image) bash -c 'if command -v podman >/dev/null && command -v mmdebstrap >/dev/null; then \
	  $(VENV)/bin/pytest -q Tests/image; \
	else echo "SKIPPED: the image check (podman or mmdebstrap could not be installed here)"; fi'

## Every Swift suite under ThreadSanitizer, built once (the run does not build again).
tsan-build: $(if $(ALL_DEPS),resolve,deps)
	@$(call phase,tsan-build) env OBS_TSAN=1 $(if $(ALL_DEPS),$(LOW)) $(SWIFT) build --build-tests --sanitize=thread \
	  --scratch-path $(TSAN_DIR)

## Under `make test` the suites run one after the other (swift test, the bench smoke, the black-box
## files, TSan), next to the builds at SCHED_IDLE: the time bounds in them (a dashboard frame under
## 250 ms, streams ended within a second) hold on 2 cores only without another suite's load.
test-tsan: tsan-build $(if $(ALL_DEPS),| test-blackbox)
	@$(call test_phase,tsan) env OBS_FUZZ_SECONDS=1 OBS_TSAN=1 OBS_TEST_DURABLE=1 OBS_SOAK_SECONDS=10 \
	  $(SWIFT) test --skip-build --sanitize=thread --scratch-path $(TSAN_DIR)

## `make bench PEERS_RUNS=3` for the medians issue 15 is judged by (about 40 minutes instead of 15).
PEERS_RUNS ?= 1
PEERS_CMD  := python3 ../shared/bench/bench.py run --w2-subs 1000 --runs $(PEERS_RUNS)
PEERS_OBS  := $(CURDIR)/.build/release/obs-server --host 127.0.0.1 --port {port} --log-level warning

## Our own wrk load tests (PUT, GET, and W7's transactions of 4 and of 1 `set` beside the PUT, issue 43),
## then W1-W4 side by side with nginx+nchan through ../shared/bench (its C epoll client, obsclient, drives
## the stream workloads and reports its own CPU); all into BENCHMARKS.md.
## The bench cannot rot: ../shared/bench's W1-W4, W7 beside the PUT and the cluster bench, a few seconds
## each, on the debug build; checks deliveries, gaps and errors, never timings.
test-bench-smoke: deps-bench deps-cluster build-tests $(if $(ALL_DEPS),| test-swift)
	@$(call test_phase,bench-smoke) env -u MAKEFLAGS python3 bench/smoke.py --binary .build/debug/obs-server --out build/bench-smoke

bench: deps-bench release bench-fanout bench-peers bench-cluster bench-queries bench-scoped bench-presence bench-webhooks
	@if [ -x ../shared/bench/client/obsclient ]; then python3 bench/posting.py --binary .build/release/obs-server; fi
	python3 bench/run.py --binary .build/release/obs-server --out BENCHMARKS.md \
	  --peers-table build/bench-peers/table.md --peers-command "$(PEERS_CMD)" --extra build/bench-posting.md \
	  --extra build/bench-cluster/cluster.md --extra build/bench-queries.md --extra build/bench-fanout.md

## Fan-out counts that do not depend on the machine (issue 46; bench/fanout_counts.py): a fixed W2
## (1,000 subscribers x 200 lockstep writes) under callgrind, strace -c -f and /proc's context
## switches, ObsServer and nginx+nchan side by side: instructions and system calls per delivery and
## per write, wake-ups per write. About 5 minutes; the table goes to build/bench-fanout.md.
## Then the same counts for the floor (its column is named ObsServer): build/bench-fanout-floor.md.
bench-fanout: deps-bench deps-valgrind release floor
	python3 bench/fanout_counts.py --binary .build/release/obs-server --out build/bench-fanout.md
	python3 bench/fanout_counts.py --binary build/floor/mhd_fanout --targets obsserver --tools callgrind,strace \
	  --out build/bench-fanout-floor.md

## The floor (issue 46; BENCHMARKS.md, "Issue 46: the floor"): a bare libmicrohttpd server with ObsServer's
## daemon flags and direct writes, serving the shared bench's ObsServer adapter and bench/callgrind.py.
floor: build/floor/mhd_fanout

build/floor/mhd_fanout: bench/floor/mhd_fanout.c | deps
	@mkdir -p build/floor
	$(CC) -O2 -Wall -Wextra -o $@ $< -lmicrohttpd -lpthread

## Queries (issue 35; bench/queries.py): W5, 1,000 SSE subscribers of one query, against W2 in the same
## run; W6, W1 with 10,000 equality and 10,000 range queries registered; bytes per query and per member.
## Puts its section "Queries (issue 35)" into BENCHMARKS.md (every other section stays). 25-40 minutes.
## The client is the shared bench's obsclient (../shared/bench is read-only) with --write-cycle.
build/obsclient: bench/obsclient.c
	@mkdir -p build
	$(CC) -O2 -Wall -Wextra -Wno-unused-parameter -o $@ $<

bench-queries: deps-bench release build/obsclient
	python3 bench/queries.py --binary .build/release/obs-server --client build/obsclient \
	  --out build/bench-queries.md --into BENCHMARKS.md

## Deliveries to URLs (issue 45; bench/webhooks.py): W8, 100 delivering observers against 100 SSE observers
## of the same keys in the same run, at maxBatch 1 and 100, and the latency of the others beside a dead URL.
## Puts its section "Deliveries to URLs, W8 (issue 45)" into BENCHMARKS.md. About 2 minutes.
bench-webhooks: deps-bench release
	python3 bench/webhooks.py --binary .build/release/obs-server --out build/bench-webhooks.md --into BENCHMARKS.md

## Scoped access (issue 36; bench/scoped.py): W1 with a scoped token against the admin token, and W2
## with every observer made by a scoped token against admin-made ones, alternating in one run. Puts
## its section "Scoped access (issue 36)" into BENCHMARKS.md. About 10 minutes.
bench-scoped: deps-bench release build/obsclient
	python3 bench/scoped.py --binary .build/release/obs-server --client build/obsclient \
	  --out build/bench-scoped.md --into BENCHMARKS.md

## Presence (issue 37; bench/presence.py): a room of 1,000 present clients each watching the room's
## query (window 100, select), 200 others joining and leaving once each at 50 writes/s, against W2 in
## the same run: join/leave -> every watcher's record (p50/p99, last watcher), server CPU per join or
## leave, one record per watcher each. Puts its section "Presence (issue 37)" into BENCHMARKS.md.
## About 5 minutes (more when noisy runs are redone).
bench-presence: deps-bench release build/obsclient
	python3 bench/presence.py --binary .build/release/obs-server --client build/obsclient \
	  --out build/bench-presence.md --into BENCHMARKS.md

## The cluster on one machine (docs/CLUSTER.md): CPU per node with the streams split over 1 and 2
## nodes, a kill -9 failover (gaps, duplicates, time to resume), and the shared W1-W3 on one --cluster
## node next to memory and --data-dir.
bench-cluster: deps-bench deps-cluster release
	python3 bench/cluster.py --binary .build/release/obs-server --out build/bench-cluster

bench-peers: deps-bench release
	@if [ -d ../shared/bench ]; then \
	  rm -rf build/bench-peers; mkdir -p build; \
	  $(MAKE) -C ../shared/bench/client >/dev/null; \
	  BENCH_OBS_CMD="$(PEERS_OBS)" $(PEERS_CMD) --targets obsserver,nchan --workloads w1,w2,w3,w4 \
	    --out $(CURDIR)/build/bench-peers/memory \
	  && BENCH_OBS_CMD="$(PEERS_OBS) --data-dir {data} --sync full" \
	    $(PEERS_CMD) --targets obsserver,nchan,etcd --workloads w1,w2,w3 --out $(CURDIR)/build/bench-peers/durable \
	  && python3 bench/peers.py --memory build/bench-peers/memory --durable build/bench-peers/durable \
	    --out build/bench-peers/table.md; \
	else echo "../shared/bench not found: skipping the side-by-side run"; fi

## 30 minutes of mixed load on the release server; prints RSS each minute (it must stay flat) and
## writes the table into BENCHMARKS.md. Not part of make test.
soak: release
	python3 bench/soak.py --minutes 30

## Instructions per PUT and per W2 write under callgrind, in memory and with --data-dir (ARCHITECTURE.md,
## "Profile (callgrind)"), and per operation of a transaction against a W1 PUT (TX, issue 43); 3-4 minutes
## a run of the ten. `make callgrind CALLGRIND_RUNS=3` for the spread.
CALLGRIND_RUNS ?= 1
callgrind: deps-valgrind release
	python3 bench/callgrind.py --binary .build/release/obs-server --runs $(CALLGRIND_RUNS)

## Where a shared-bench workload's time goes (issue 46; bench/profile.py): the server sampled with
## perf (cpu-clock, call graphs) in the workload's load phase; kernel and user-space shares, the
## functions by self and by children. `make profile WORKLOAD=w1`; about a minute.
WORKLOAD ?= w3
profile: deps-bench deps-perf release
	python3 bench/profile.py --binary .build/release/obs-server --workload $(WORKLOAD)

deps-perf:
	@.ci/packages perf

clean:
	rm -rf .build $(TSAN_DIR) $(STATIC_DIR) build
