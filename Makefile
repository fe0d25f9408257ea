# Every target sets itself up: `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install demo test check lint-graphs schema bench clean graphviz

install: $(STAMP)

# One pip command so the resolver sees torch==2.13.0 next to everything that needs torch.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/cgraph run graphs/medical_checkin.yaml

# `cgraph render`, `--html` and their tests draw with Graphviz: install it when it is missing.
test: $(STAMP) graphviz
	$(BIN)/pytest -n 2 -q

graphviz:
	@command -v dot >/dev/null || (apt-get update -qq && apt-get install -y -qq graphviz) \
	  || { echo "make: Graphviz's \`dot\` is missing; install the graphviz package" >&2; exit 1; }

check: $(STAMP)
	$(BIN)/ruff check cgraph tests bench
	$(BIN)/ruff format --check cgraph tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/cgraph lint graphs

schema: $(STAMP)
	$(BIN)/python -m cgraph.spec.schema > schemas/context-graph.schema.json
	cp schemas/context-graph.schema.json cgraph/spec/data/context-graph.schema.json
	$(BIN)/python -m cgraph.spec.testfile > schemas/cgraph-test.schema.json
	cp schemas/cgraph-test.schema.json cgraph/spec/data/cgraph-test.schema.json

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
