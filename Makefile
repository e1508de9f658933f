# Two commands on a fresh Debian 12 machine, as root: `make demo` and `make test`.
# Each installs what it needs first (Debian packages, a virtualenv), then runs.
SHELL := /bin/bash
# Debian's own python3 (not one in a home folder: the unprivileged unit run must reach it).
PYTHON ?= /usr/bin/python3
VENV := .venv
BIN := $(VENV)/bin
STAMPS := .stamps
# The display stack (and `ip`, for programs started in a network namespace of their own), the
# private D-Bus and AT-SPI buses of accessibility trees; each program's own packages come from
# containers/*/app.yaml.
BASE_PACKAGES := python3 python3-venv xvfb x11-utils openbox x11vnc fonts-dejavu-core procps iproute2 \
  dbus at-spi2-core
# The Docker backend: the engine, base images by debootstrap, the live view (noVNC).
DOCKER_PACKAGES := docker.io debootstrap novnc websockify
APT := DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends
# All traffic stays on loopback: no bridge network, no NAT rules; containers use --network host.
DOCKERD := dockerd --bridge=none --iptables=false --ip-masq=false

.PHONY: deps services engine images demo test test-all unit lint docs bench dataset medspot-given clean soak

deps: $(STAMPS)/programs services

$(STAMPS)/base: Makefile
	@mkdir -p $(STAMPS)
	apt-get update -q
	$(APT) $(BASE_PACKAGES)
	@touch $@

# Python only: what the fast checks need. Debian's python3 needs python3-venv for a
# virtualenv (installed here when missing, which needs root once); every extra is installed,
# with the documentation's tools (MkDocs, Material, mkdocstrings: the `docs` extra).
$(STAMPS)/venv: pyproject.toml setup.py
	@mkdir -p $(STAMPS)
	@$(PYTHON) -c 'import ensurepip' 2>/dev/null || { apt-get update -q && $(APT) python3-venv; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all,test,docs]'
	@touch $@

# The fast checks: no root, no X display, no Docker.
lint: $(STAMPS)/venv
	$(BIN)/ruff check clinigym tests examples docs/hooks
	$(BIN)/mypy

unit: $(STAMPS)/venv
	CLINIGYM_MEDSPOT="$${CLINIGYM_MEDSPOT:-$(MEDSPOT)}" $(BIN)/pytest -q -p no:cacheprovider tests/unit

# The documentation site (mkdocs.yml, docs/) into ./site; a warning (a broken link, a docstring
# cross-reference that does not resolve) fails the build. The CLI reference is generated here.
docs: $(STAMPS)/venv
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Each program's Debian packages, then its pinned npm and Python packages (a program's own
# virtualenv: GNU Health).
$(STAMPS)/programs: $(STAMPS)/base $(STAMPS)/venv $(wildcard containers/*/app.yaml)
	$(APT) $$($(BIN)/clinigym programs --packages)
	$(BIN)/clinigym programs --fetch
	$(BIN)/clinigym programs
	@touch $@

# The services programs use, started when not running: Debian's PostgreSQL cluster (GNU
# Health's database; it listens on localhost only), waited for (bounded), and GNU Health's
# role in it (made by its superuser here, as containers cannot).
services: $(STAMPS)/programs
	@pg_isready -q -h 127.0.0.1 -p 5432 || { \
	  cluster=$$(pg_lsclusters -h | awk 'NR == 1 {print $$1, $$2}'); \
	  echo "starting PostgreSQL $$cluster"; pg_ctlcluster $$cluster start; \
	  pg_isready -q -t 60 -h 127.0.0.1 -p 5432; }
	/usr/bin/python3 containers/gnuhealth/database.py role

$(STAMPS)/docker: Makefile
	@mkdir -p $(STAMPS)
	$(APT) $(DOCKER_PACKAGES)
	@touch $@

# Starts the engine when none answers; waits (bounded) until it does.
engine: $(STAMPS)/docker
	@docker info >/dev/null 2>&1 || { \
	  echo "starting $(DOCKERD)"; \
	  setsid $(DOCKERD) </dev/null >/var/log/clinigym-dockerd.log 2>&1 & \
	  for i in $$(seq 120); do docker info >/dev/null 2>&1 && break; sleep 0.5; done; \
	  docker info >/dev/null 2>&1 || { tail -20 /var/log/clinigym-dockerd.log; exit 1; }; }

# Cached: an image whose inputs did not change is not rebuilt.
images: deps engine
	$(BIN)/clinigym images

# The demo: a cross-section of the library (the first scenarios of every program by id), in the
# steps mode (MedSPOT) and the goal mode (MedCUA) for the oracle and the random agent, the OCR agent
# in the steps and plan modes; then every run's table, the runs side by side, and an HTML report;
# then one task family at three seeds (three generated instances) under the oracle and the random agent.
DEMO_PER_PROGRAM ?= 3
# The demo's task family: any family key of `clinigym tasks`.
DEMO_FAMILY ?= orthanc/delete-study-lookalikes
DEMO_RUN = $(BIN)/clinigym run --scenario '*' --per-program $(DEMO_PER_PROGRAM) --overwrite
DEMO_RUNS = runs/demo-oracle runs/demo-random runs/demo-ocr runs/demo-oracle-goal runs/demo-random-goal runs/demo-ocr-plan
demo: deps images
	$(DEMO_RUN) --agent oracle --out runs/demo-oracle
	$(DEMO_RUN) --agent random --seed 1 --out runs/demo-random
	$(DEMO_RUN) --agent ocr --out runs/demo-ocr
	$(DEMO_RUN) --mode goal --agent oracle --out runs/demo-oracle-goal
	$(DEMO_RUN) --mode goal --agent random --seed 1 --out runs/demo-random-goal
	$(DEMO_RUN) --mode plan --agent ocr --out runs/demo-ocr-plan
	@for run in $(DEMO_RUNS); do echo; echo "== $$run =="; $(BIN)/clinigym score $$run; done
	@echo; echo "== side by side =="; $(BIN)/clinigym compare $(DEMO_RUNS)
	$(BIN)/clinigym report $(DEMO_RUNS) --out runs/demo-report
	@echo; echo "== one task family, three instances =="
	@for seed in 0 1 2; do $(BIN)/clinigym tasks '$(DEMO_FAMILY)' --seed $$seed | sed -n 2p; done
	$(BIN)/clinigym run --family '$(DEMO_FAMILY)' --episodes 3 --mode goal --agent oracle --overwrite --out runs/demo-family
	$(BIN)/clinigym run --family '$(DEMO_FAMILY)' --episodes 3 --mode goal --agent random --seed 1 --overwrite --out runs/demo-family-random

# The tests that compare with MedSPOT read its annotation files: MEDSPOT=DIR (or CLINIGYM_MEDSPOT).
test: deps images
	CLINIGYM_MEDSPOT="$${CLINIGYM_MEDSPOT:-$(MEDSPOT)}" $(BIN)/pytest -q -rs --durations=25 tests

test-all: deps images
	$(BIN)/pip install -q -e '.[all,test,guiactor]'
	CLINIGYM_MEDSPOT="$${CLINIGYM_MEDSPOT:-$(MEDSPOT)}" $(BIN)/pytest -q -rs -m '' tests

# The fault soak (#15; not part of `make test`): 1000 oracle episodes with 4 workers over
# DICOMscope and Orthanc Explorer (local) and ITK-SNAP (Docker), 150 faults injected.
soak: deps images
	$(BIN)/clinigym soak --out runs/soak

bench: deps images
	$(BIN)/clinigym bench --backends local docker --json-out runs/bench.json
	$(BIN)/clinigym bench --throughput --rounds 3 --json-out runs/bench-throughput.json

# MedSPOT-Live: the oracle over the whole library, exported in MedSPOT's format, validated
# against the live programs, and its shape printed beside MedSPOT's own. MedSPOT's annotations
# are not part of the repository: `make dataset MEDSPOT=DIR` names their folder.
MEDSPOT ?=
DATASET ?= datasets/medspot-live
# Checked before anything is built or run.
medspot-given:
	@test -n "$(MEDSPOT)" || { echo "make dataset: give the folder of MedSPOT's <Software>_Annotation.json files: make dataset MEDSPOT=DIR" >&2; exit 2; }
	@test -d "$(MEDSPOT)" || { echo "make dataset: MEDSPOT=$(MEDSPOT) is not a folder" >&2; exit 2; }

dataset: medspot-given deps images
	$(BIN)/clinigym run --scenario '*' --agent oracle --out runs/dataset-oracle --overwrite
	rm -rf $(DATASET)
	$(BIN)/clinigym export runs/dataset-oracle --medspot $(DATASET) --parquet $(DATASET).parquet
	$(BIN)/clinigym validate $(DATASET)
	@echo; $(BIN)/clinigym shape $(MEDSPOT) $(DATASET) --per-program
	@echo; $(BIN)/clinigym coverage $(MEDSPOT) | tail -n 7

clean:
	rm -rf $(VENV) $(STAMPS) runs *.egg-info
