# The two commands a new user needs: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CONVARCH := $(VENV)/bin/convarch
DEMO_DB := .convarch-demo/convarch.duckdb

.PHONY: run test install install-test bench bench-sources bench-rewrites clean

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

install: $(VENV)/bin/activate
	$(PY) -m pip install --quiet -e . --config-settings editable_mode=strict

install-test: $(VENV)/bin/activate
	$(PY) -m pip install --quiet -e '.[test]' --config-settings editable_mode=strict

## Ingest this machine's agent stores (or the bundled demo store) and list the sessions.
run: install
	@if $(CONVARCH) sources --json | $(PY) -c 'import json,sys; sys.exit(0 if any(s["files"] > 0 for s in json.load(sys.stdin)) else 1)'; then \
		$(CONVARCH) ingest --all && $(CONVARCH) sessions --limit 20; \
	else \
		echo "No agent store found on this machine; ingesting the demo store into $(DEMO_DB)." >&2; \
		$(CONVARCH) --db $(DEMO_DB) ingest claude_code --root fixtures/claude_code/demo && \
		$(CONVARCH) --db $(DEMO_DB) sessions; \
	fi

## Run the test suite.
test: install-test
	$(PY) -m pytest -q

## Measure ingest, re-ingest, search, chains and handoffs against same-run baselines.
bench: $(VENV)/bin/activate
	$(PY) -m pip install --quiet -e '.[bench]' --config-settings editable_mode=strict
	$(PY) bench/run.py $(BENCH_ARGS)

## The bench's every-source section alone: per-file and per-record cost of each adapter.
bench-sources: $(VENV)/bin/activate
	$(PY) -m pip install --quiet -e '.[bench]' --config-settings editable_mode=strict
	$(PY) bench/sources.py $(BENCH_ARGS)

## The bench's rewritten-stores section alone: a grown JSON history, a database written elsewhere.
bench-rewrites: $(VENV)/bin/activate
	$(PY) -m pip install --quiet -e '.[bench]' --config-settings editable_mode=strict
	$(PY) bench/rewrites.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .convarch-demo build *.egg-info
