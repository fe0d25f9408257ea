# Every target sets itself up: `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export LITELLM_LOCAL_MODEL_COST_MAP := True

.PHONY: install demo test check lint-graphs schema bench clean

install: $(STAMP)

# One pip command so the resolver sees torch==2.13.0 next to everything that needs torch.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/cgraph run graphs/medical_checkin.yaml

test: $(STAMP)
	$(BIN)/pytest -n 2 -q

check: $(STAMP)
	$(BIN)/ruff check cgraph tests bench
	$(BIN)/ruff format --check cgraph tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/cgraph lint graphs

schema: $(STAMP)
	$(BIN)/python -m cgraph.spec.schema > schemas/context-graph.schema.json
	cp schemas/context-graph.schema.json cgraph/spec/data/context-graph.schema.json

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[dev,bench]"
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
