# Two commands on a fresh Debian 12 machine, as root: `make demo` and `make test`.
# Each installs what it needs first (Debian packages, a virtualenv), then runs.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .stamps
# The display stack; each program's own packages come from containers/*/app.yaml.
BASE_PACKAGES := python3 python3-venv xvfb x11-utils openbox x11vnc fonts-dejavu-core procps
APT := DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends

.PHONY: deps demo test test-all bench clean

deps: $(STAMPS)/programs

$(STAMPS)/base: Makefile
	@mkdir -p $(STAMPS)
	apt-get update -q
	$(APT) $(BASE_PACKAGES)
	@touch $@

$(STAMPS)/venv: pyproject.toml $(STAMPS)/base
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	@touch $@

$(STAMPS)/programs: $(STAMPS)/venv $(wildcard containers/*/app.yaml)
	$(APT) $$($(BIN)/clinigym apps --packages)
	$(BIN)/clinigym apps
	@touch $@

demo: deps
	$(BIN)/clinigym run --scenario '*' --agent oracle --out runs/demo-oracle --overwrite
	$(BIN)/clinigym run --scenario '*' --agent random --seed 1 --out runs/demo-random --overwrite
	@echo; echo "== oracle =="; $(BIN)/clinigym score runs/demo-oracle
	@echo; echo "== random =="; $(BIN)/clinigym score runs/demo-random

test: deps
	$(BIN)/pytest -q -rs tests

test-all: deps
	$(BIN)/pytest -q -rs -m '' tests

bench: deps
	$(BIN)/clinigym bench --out runs/bench.json

clean:
	rm -rf $(VENV) $(STAMPS) runs *.egg-info
