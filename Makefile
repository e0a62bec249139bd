# biossd — the two commands: `make run` (install, run the default study, render the figures)
# and `make test` (install, run the whole test suite). Everything is installed by
# install/bootstrap.sh, idempotently; a second call skips what is already there.

SHELL      := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
VENV       ?= $(CURDIR)/.venv
RESULTS    ?= results
PROFILE    ?= full
NXF_ARGS   ?=
# `make run` resumes: an interrupted study runs only what is missing, a second one with nothing
# changed measures nothing again (Nextflow's -resume); FRESH=1 starts over.
FRESH      ?=
# It resumes the last session that wrote into $(RESULTS) (pipeline_info/sessions.tsv), not
# whichever ran last in this directory (a test or another study would be a different plan).
LAST_SESSION = $(shell awk -F'\t' 'NR > 1 { s = $$1 } END { print s }' $(RESULTS)/pipeline_info/sessions.tsv 2>/dev/null)
RESUME     = $(if $(FRESH),--replace_results true,-resume $(LAST_SESSION))
# Run directories reach the results as hard links when they share the work directory's file
# system (nothing is written while the next run measures), else as Nextflow's copies; a RESULTS
# that is a symbolic link is judged by the folder it points to (stat -L).
publish_mode = $(shell mkdir -p $(1) work && [ "$$(stat -L -c %d $(1))" = "$$(stat -L -c %d work)" ] && echo link || echo copy)
PYTEST_ARGS ?=

export VENV
export PATH := $(VENV)/bin:$(PATH)
export NXF_OFFLINE := true
export NXF_HOME ?= $(VENV)/nextflow/home

.PHONY: run check experiments slurm-up slurm-down test install tex tools containers study figures paper crate summary lock clean-results help

help:
	@echo "make run    install everything, run 'nextflow run study -profile $(PROFILE) -resume', render figures (FRESH=1: start over)"
	@echo "make test   install everything, run the whole test suite"
	@echo "make check  the fast loop: the unit tests (no root, no tools, no TeX; the Python environment only)"
	@echo "make experiments [EXPERIMENT=sort_memory]   the four related experiments on this machine"
	@echo "make slurm-up / slurm-down   a one-node SLURM cluster on this host (partitions fast, slow)"
	@echo "make figures RESULTS='dir [dir...]'   re-run the notebooks over one or more result sets"
	@echo "make paper RESULTS='dir [dir...]'     build paper/build/supplement.pdf (installs TeX Live)"
	@echo "make crate RESULTS=dir   write an RO-Crate (ro-crate-metadata.json) of a result set"
	@echo "make tools        install the catalogue's runnable tools natively (apt, Maven)"
	@echo "make containers   build every runnable tool's container, smoke-test it, print the status"

install:
	@install/bootstrap.sh all

# The pipeline renders the report itself (its REPORT step); `make figures` re-renders it.
run: install tools
	nextflow -log $(RESULTS)/pipeline_info/nextflow.log run study -profile $(PROFILE) --outdir $(RESULTS) $(RESUME) \
	  --publish_mode $(call publish_mode,$(RESULTS)) $(NXF_ARGS)
	@$(MAKE) --no-print-directory summary RESULTS=$(RESULTS)

# The four related experiments (study/experiments/), at their test size, on this machine.
EXPERIMENT ?= all
EXPERIMENTS_RESULTS ?= results-experiments
experiments: install tools
	nextflow -log $(EXPERIMENTS_RESULTS)/pipeline_info/nextflow.log run study -profile test --experiment $(EXPERIMENT) \
	  --outdir $(EXPERIMENTS_RESULTS) --publish_mode $(call publish_mode,$(EXPERIMENTS_RESULTS)) $(NXF_ARGS)
	@echo "experiments: $(abspath $(EXPERIMENTS_RESULTS))/experiments/  report: $(abspath $(EXPERIMENTS_RESULTS))/report/"

# A one-node SLURM cluster on this host (partitions fast and slow), to try -profile slurm:
#   make slurm-up; eval $$(biossd slurm env); nextflow run study -profile test,slurm --slurm_partitions ssd=fast,hdd=slow
slurm-up: install
	@biossd slurm up
slurm-down: install
	@biossd slurm down

# Several result folders (e.g. one per host of a matched pair) make one report, in the first's.
figures: install
	@biossd report $(RESULTS) >/dev/null
	@$(MAKE) --no-print-directory summary RESULTS="$(RESULTS)"

summary:
	@biossd study harness $(firstword $(RESULTS)) 2>/dev/null || true
	@echo
	@echo "results:  $(foreach r,$(RESULTS),$(abspath $(r))/)  (runs per host and storage class)"
	@echo "features: $(foreach r,$(RESULTS),$(abspath $(r))/features.csv)"
	@echo "report:   $(abspath $(firstword $(RESULTS)))/report/  (figures/, tables/, notebooks/)"
	@ls -1 $(firstword $(RESULTS))/report/figures/ $(firstword $(RESULTS))/report/tables/ | sed 's/^/          /'

# The whole suite in one session, on the host's cores (pytest-xdist): a test that measures runs with
# no other test beside it, the rest side by side (tests/alone.py says which is which); a module's
# tests run on one worker (--dist loadfile), its module fixtures made once, the modules in the order
# tests/alone.py gives them (--no-loadscope-reorder: not xdist's, by size). A selection that
# PYTEST_ARGS leaves empty (exit 5) is not a failure.
test: install tools tex
	python -m pytest -n auto --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS) || [ $$? -eq 5 ]

# The fast loop while changing code: the house's lint (ruff, pyproject's [tool.ruff]), then every
# test not marked `integration` (those need root, the tools, Nextflow or TeX), side by side on the
# host's cores (pytest-xdist; a test marked `alone` runs with none beside it). It installs only the
# Python environment; `make test` stays the gate.
check:
	@install/bootstrap.sh python
	ruff check --no-cache src tests benchmarks
	ruff check --no-cache --preview --select E301,E302,E303,E304,E305,E306 src tests benchmarks
	python -m pytest -q -m "not integration" -p no:cacheprovider -n auto $(PYTEST_ARGS)

# TeX Live and pdftotext, for the supplement and its test (not needed by `make run`).
tex:
	@install/bootstrap.sh tex

# The supplement of one or more result sets (the report of the first is used, made if missing).
paper: install tex
	biossd paper $(RESULTS) --out paper/build
	@echo "supplement: $(abspath paper/build/supplement.pdf)"

crate: install
	biossd crate $(firstword $(RESULTS))

tools: install
	@biossd catalogue install

# podman build + Charliecloud, cached: a second run rebuilds nothing that did not change.
ENGINE ?= charliecloud
containers: tools
ifeq ($(ENGINE),docker)
	eval "$$(biossd docker up --owner-pid $$$$)"; trap 'biossd docker down' EXIT; \
	  biossd catalogue build --engine docker; \
	  BIOSSD_ALL_CONTAINERS=1 BIOSSD_CONTAINER_ENGINE=docker python -m pytest -q tests/test_tools.py -k container
else
	biossd catalogue build
	BIOSSD_ALL_CONTAINERS=1 python -m pytest -q tests/test_tools.py
endif
	biossd catalogue status

# Regenerate install/requirements.lock from install/requirements.in (needs network to PyPI).
lock:
	python -m pip install -q pip-tools
	pip-compile -q --allow-unsafe --generate-hashes --strip-extras --no-header \
	  --output-file install/requirements.lock install/requirements.in
	for tool in multiqc cffconvert roc-validator nf-core; do pip-compile -q --allow-unsafe --generate-hashes --strip-extras --no-header \
	  --output-file install/$$tool/requirements.lock install/$$tool/requirements.in; done
