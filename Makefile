# ObsServer — the two commands: `make run` and `make test`. Both install what
# is missing (system packages with apt-get) before building.

SHELL      := /bin/bash
.SHELLFLAGS := -eo pipefail -c
SWIFT      ?= swift
HOST       ?= 127.0.0.1
PORT       ?= 8080
SUDO       := $(shell [ "$$(id -u)" = 0 ] || command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo)
APT_GET    := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get
TSAN_DIR   := .build-tsan

.PHONY: run build release deps deps-bench test test-swift test-tsan lint bench bench-peers clean help

help:
	@echo "make run    - install what is missing, build, start on http://$(HOST):$(PORT)"
	@echo "make test   - install what is missing, then every test (lint, swift test, thread sanitizer)"
	@echo "make bench  - release build, then the load tests in bench/ (table in BENCHMARKS.md)"

## System packages: checked with pkg-config / command -v, installed with apt-get when missing.
deps:
	@command -v pkg-config >/dev/null && pkg-config --exists libmicrohttpd || { \
	  echo "==> installing libmicrohttpd-dev and pkg-config"; \
	  $(APT_GET) update -qq && $(APT_GET) install -y -qq libmicrohttpd-dev pkg-config >/dev/null; }

deps-bench: deps
	@command -v wrk >/dev/null && command -v taskset >/dev/null || { \
	  echo "==> installing wrk"; $(APT_GET) update -qq && $(APT_GET) install -y -qq wrk util-linux >/dev/null; }

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: release
	.build/release/obs-server --host $(HOST) --port $(PORT) --public-dir Public $(ARGS)

## Tests: format lint, no warnings in our own code, all suites, then all suites again under ThreadSanitizer
## (OBS_TSAN=1 swaps Mutex for a lock TSan can see: see Sources/ObservationCore/Locked.swift).
test: deps lint test-swift test-tsan

lint:
	$(SWIFT) format lint --strict -r Sources Tests

test-swift:
	@mkdir -p build
	$(SWIFT) build --build-tests 2>&1 | tee build/build.log
	@! grep -E "^/.*/(Sources|Tests)/.*: warning:" build/build.log || { echo "warnings in project code"; exit 1; }
	$(SWIFT) test --skip-build

test-tsan:
	OBS_TSAN=1 $(SWIFT) test --sanitize=thread --scratch-path $(TSAN_DIR)

bench: deps-bench release
	python3 bench/run.py --binary .build/release/obs-server --out BENCHMARKS.md

## The side-by-side harness in ../shared/bench (nginx+nchan, etcd), W1.
bench-peers: deps-bench release
	$(MAKE) -C ../shared/bench/client
	BENCH_OBS_CMD="$(CURDIR)/.build/release/obs-server --host 127.0.0.1 --port {port} --data-dir {data}" \
	  python3 ../shared/bench/bench.py run --targets obsserver,nchan --workloads w1 --runs 3 --out build/bench-peers

clean:
	rm -rf .build $(TSAN_DIR) build
