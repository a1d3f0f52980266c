# Reproduction monorepo. `make help` lists the targets.
# Two commands on a fresh machine: `make reproduce` (every paper, quick profile, then the report)
# and `make test`. Every target builds the virtual environment first when needed.

PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PROFILE ?= quick
# Extra notebook parameters, e.g. make reproduce-diffusion P="seed=1 n_forward=20000"
P       ?=
# Device override, e.g. DEVICE=cuda
DEVICE  ?=
# Several seeds, e.g. SEEDS="0 1 2": one run per seed and a verdict per seed
SEEDS   ?=
# Datasets for `make data`: fashion_mnist mnist cifar10 imagenet (data/README.md), e.g. DATASETS="mnist cifar10"
DATASETS ?= fashion_mnist
# Papers at once in `make reproduce` (`reproduce all --jobs`): a paper whose numbers are timings runs alone after them
JOBS    ?= 1
# Test processes (pytest-xdist, one test file, or one paper's notebooks and its runner check, per process at a time): the cores, at most 4
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
RUNFLAGS = --profile $(PROFILE) $(foreach p,$(P),-p '$(p)') $(if $(DEVICE),--device $(DEVICE)) $(if $(SEEDS),--seeds $(SEEDS))
# The papers the runner knows: a claims.yaml and at least one notebook.
PAPERS  := $(foreach p,$(patsubst papers/%/claims.yaml,%,$(wildcard papers/*/claims.yaml)),$(if $(wildcard notebooks/$(p)/[0-9]*.ipynb),$(p)))
# After a run, the report is rebuilt from the complete runs (a failed run never enters it).
REPORT  = $(PY) -m common.report

# An unknown `reproduce-<id>` stops here, in one line, before anything is built or written.
UNKNOWN := $(filter-out $(addprefix reproduce-,$(PAPERS)),$(filter reproduce-%,$(MAKECMDGOALS)))
ifneq ($(UNKNOWN),)
$(error unknown paper '$(UNKNOWN:reproduce-%=%)'; choose one of: $(PAPERS) (as make reproduce-<id>))
endif

.PHONY: help setup data reproduce report readme new-paper test test-deps bench device-check budget lab clean distclean $(addprefix reproduce-,$(PAPERS))
.DEFAULT_GOAL := help

help: ## list the targets
	@echo "make <target>   (PROFILE=smoke|quick|full, P=\"key=value ...\", DEVICE=cpu|cuda|rocm|xpu|mps, SEEDS=\"0 1 2\")"
	@grep -E '^[a-zA-Z_<>-]+:.*## |^## [a-z<>-]+ ' $(MAKEFILE_LIST) | sed -e 's/^## //' -e 's/:.*## /\t/' -e 's/^\([a-z<>-]*\) /\1\t/' | awk -F'\t' '{printf "  %-18s %s\n", $$1, $$2}'
	@echo "  papers: $(PAPERS)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --no-compile -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	@# bytecode for what a run imports, in two processes (common/bytecode.py): a quarter of the venv's files;
	@# compiling all of them (pip, or compileall) took 14 s more on 2 cores, for files no run imports
	@$(PY) -m common.bytecode common papers
	@touch $(STAMP)

setup: $(STAMP) ## create .venv and install the pinned dependencies (idempotent)

data: $(STAMP) ## the DATASETS (default fashion_mnist; e.g. DATASETS="mnist cifar10") into data/<folder>/, checksums checked
	$(PY) -m common.download $(DATASETS)

reproduce: $(STAMP) ## data, every paper at PROFILE (default quick), then the report
	@$(PY) -m common.download || echo "continuing without Fashion-MNIST: papers that need it will say so"
	@$(PY) -m common.reproduce all $(RUNFLAGS) --jobs $(JOBS); status=$$?; \
	if [ $$status -le 1 ]; then $(REPORT); fi; exit $$status

## reproduce-<id> one paper (data first), then the report: make reproduce-<id> [PROFILE=...] [P="k=v ..."] [SEEDS=...]
$(addprefix reproduce-,$(PAPERS)): reproduce-%: $(STAMP)
	@$(PY) -m common.download >/dev/null || echo "continuing without Fashion-MNIST: if $* needs it, it will say so"
	@$(PY) -m common.reproduce $* $(RUNFLAGS); status=$$?; \
	if [ $$status -eq 0 ]; then $(REPORT) | tail -n 1; fi; exit $$status

report: $(STAMP) ## results/REPORT.md and results/report.html from the complete runs of every profile
	$(REPORT)

readme: $(STAMP) ## rewrite the READMEs' generated tables from results/ (stamped with each run's git revision)
	$(PY) -m common.readme

# `make new-paper ID=<id>`: a bad id, or one a paper already uses, stops here in one line, before anything is written.
ifneq ($(filter new-paper,$(MAKECMDGOALS)),)
NEW_PAPER_PROBLEM := $(shell $(PYTHON) templates/new_paper.py --check '$(ID)' 2>&1)
ifneq ($(NEW_PAPER_PROBLEM),)
$(error $(NEW_PAPER_PROBLEM))
endif
endif

new-paper: ## a seventh paper: templates/paper/ (a working toy) copied to papers/, notebooks/, tests/, benchmarks/ as ID: make new-paper ID=<id>
	@$(PYTHON) templates/new_paper.py '$(ID)'

test-deps: ## what the tests need beyond the venv: a headless browser (Debian chromium) for the report check
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi; \
	if ! command -v apt-get >/dev/null 2>&1; then echo "test-deps: no chromium and no apt-get: the report's browser check will be skipped"; exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then sudo=; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; \
	else echo "test-deps: no chromium, and installing it needs root or password-less sudo: the report's browser check will be skipped"; exit 0; fi; \
	echo "test-deps: installing chromium (apt-get) for the report's browser check"; \
	$$sudo apt-get install -y -q chromium >/dev/null 2>&1 || { $$sudo apt-get update -q >/dev/null 2>&1 && $$sudo apt-get install -y -q chromium >/dev/null 2>&1; } \
	|| echo "test-deps: could not install chromium: the report's browser check will be skipped"

# Each of the TEST_JOBS test processes, and each notebook kernel or process it starts, gets its share of the cores as
# its pools' worker count (REPRO_THREADS: common.parallel, the papers' spawned pools) and as
# BLAS/OpenMP threads (1 on 2 cores: a second thread spins on the core the other test process holds). Work units (a test
# file, or a paper's notebooks with its runner check, which judges what nbval ran) run longest
# first (tests/conftest.py), so the run ends on short ones on every process (--no-loadscope-reorder keeps that order).
# Bytecode is cached even where PYTHONDONTWRITEBYTECODE is set (CI images set it): without a cache every test process
# redoes pytest's assertion rewrite of every test module (about 4 s of CPU a process; the caches are .gitignored).
test: $(STAMP) test-deps ## unit tests, end-to-end smoke runs and notebook validation (nbval)
	@tmp=$$(mktemp -d); n=$$(nproc 2>/dev/null || echo 2); case "$(TEST_JOBS)" in ''|*[!0-9]*|0) t=1;; *) t=$$((n / $(TEST_JOBS)));; esac; \
	  [ $$t -ge 1 ] || t=1; OMP_NUM_THREADS=$$t MKL_NUM_THREADS=$$t OPENBLAS_NUM_THREADS=$$t REPRO_THREADS=$$t \
	  REPRO_RESULTS=$$tmp REPRO_PROFILE=smoke PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -q --durations=15 -o tmp_path_retention_policy=failed \
	  -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder tests notebooks --nbval-lax --nbval-current-env; status=$$?; rm -rf $$tmp; exit $$status

bench: $(STAMP) ## benchmarks; figures written to results/bench/*.json
	@set -e; for f in benchmarks/bench_*.py; do \
	  case $$f in *_cuda.py) $(PY) -c "import sys, torch; sys.exit(not torch.cuda.is_available())" \
	    || { echo "== $$f: skipped (no CUDA device; benchmarks/device_nlm.sh runs it on a GPU machine)"; continue; };; esac; \
	  echo "== $$f"; $(PY) $$f; done

device-check: ## on a GPU machine (8 min of steps): every paper's smoke on the GPU, the CUDA tests, timed full-profile slices: results/bench/device_check.json (DRY=1: the same on the CPU; IMPORT=path: bring a device run's summary, or the folder its OUT came back to, into results/bench for make readme)
	@$(if $(IMPORT),$(PY) benchmarks/device_check.py --import $(IMPORT),bash benchmarks/device_check.sh $(if $(DRY),--dry-run))

budget: $(STAMP) ## time the set-up and `make reproduce` end to end (temporary venv and results folder) against the front-door goal (20 min on a 2-core machine without AVX-512; elsewhere through benchmarks/speed_vs_zen3.py): results/bench/reproduce.json
	$(PY) benchmarks/reproduce_budget.py --jobs $(JOBS)

lab: $(STAMP) ## JupyterLab on the venv's kernel
	$(VENV)/bin/jupyter lab notebooks

clean: ## remove results and caches (keeps .venv and data)
	rm -rf results .pytest_cache
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean ## also remove .venv
	rm -rf $(VENV)
