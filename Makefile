# Reproduction monorepo. `make help` lists the targets.
# Two commands on a fresh machine: `make reproduce` (every paper, quick profile, then the report)
# and `make test`. Every target builds the virtual environment first when needed.

PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
PROFILE ?= quick
# Extra notebook parameters, e.g. make reproduce-diffusion P="seed=1 n_paths=20000"
P       ?=
# Device override, e.g. DEVICE=cuda
DEVICE  ?=
RUNFLAGS = --profile $(PROFILE) $(foreach p,$(P),-p $(p)) $(if $(DEVICE),--device $(DEVICE))
PAPERS  := $(patsubst papers/%/claims.yaml,%,$(wildcard papers/*/claims.yaml))

.PHONY: help setup data reproduce report test bench lab clean distclean $(addprefix reproduce-,$(PAPERS))
.DEFAULT_GOAL := help

help: ## list the targets
	@echo "make <target>   (PROFILE=smoke|quick|full, P=\"key=value ...\", DEVICE=cpu|cuda|rocm|xpu|mps)"
	@grep -E '^[a-zA-Z_%-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | awk -F'\t' '{printf "  %-18s %s\n", $$1, $$2}'
	@echo "  papers: $(PAPERS)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	@touch $(STAMP)

setup: $(STAMP) ## create .venv and install the pinned dependencies (idempotent)

data: $(STAMP) ## obtain Fashion-MNIST (Debian package, else the official download into data/)
	$(PY) -m common.download

reproduce: $(STAMP) ## data, every paper at PROFILE (default quick), then the report
	@$(PY) -m common.download || echo "continuing without Fashion-MNIST: papers that need it will say so"
	@$(PY) -m common.reproduce all $(RUNFLAGS); status=$$?; \
	$(PY) -m common.report --profile $(PROFILE); exit $$status

reproduce-%: $(STAMP) ## one paper: make reproduce-<id> [PROFILE=...] [P="k=v ..."]
	@$(PY) -m common.reproduce $* $(RUNFLAGS); status=$$?; \
	$(PY) -m common.report --profile $(PROFILE) >/dev/null; exit $$status

report: $(STAMP) ## results/REPORT.md and results/report.html from the existing runs
	$(PY) -m common.report --profile $(PROFILE)

test: $(STAMP) ## unit tests, end-to-end smoke runs and notebook validation (nbval)
	REPRO_PROFILE=smoke $(PY) -m pytest -q tests notebooks --nbval-lax --nbval-current-env

bench: $(STAMP) ## benchmarks; figures written to results/bench/*.json
	@set -e; for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f; done

lab: $(STAMP) ## JupyterLab on the venv's kernel
	$(VENV)/bin/jupyter lab notebooks

clean: ## remove results and caches (keeps .venv and data)
	rm -rf results .pytest_cache
	find . -name __pycache__ -type d -not -path './$(VENV)/*' -prune -exec rm -rf {} +

distclean: clean ## also remove .venv
	rm -rf $(VENV)
