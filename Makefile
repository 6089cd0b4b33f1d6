# The two quickstart commands: `make demo` (the main job, offline, on the example OKF bundle)
# and `make test` (every test session, each in its own environment).
PYTHON ?= python3
VENV := .venv

$(VENV)/bin/nox:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q -e '.[dev]'

.PHONY: demo test lint unit
QUESTION ?= How do I recover when the nightly load fails?

demo: $(VENV)/bin/nox
	$(VENV)/bin/agentkernel-kb ask "$(QUESTION)" examples/cli/knowledgebase/openai/okf/bundle

test: $(VENV)/bin/nox
	$(VENV)/bin/nox

lint: $(VENV)/bin/nox
	$(VENV)/bin/nox -s lint

unit: $(VENV)/bin/nox
	$(VENV)/bin/nox -s unit
