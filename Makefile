# The two quickstart commands: `make demo` (the main job, offline, on the example OKF bundle)
# and `make test` (every test session, each in its own environment).
PYTHON ?= python3
VENV := .venv

$(VENV)/bin/nox:
	@echo "make: first run: creating $(VENV) with $(PYTHON) (once; the next runs start at once)"
	$(PYTHON) -m venv $(VENV)
	@echo "make: installing agentkernel and its dev tools into $(VENV) (about a minute on a cold machine)"
	$(VENV)/bin/pip install --progress-bar on -e '.[dev]'
	@echo "make: installed"

.PHONY: demo test lint unit
QUESTION ?= How do I recover when the nightly load fails?

demo: $(VENV)/bin/nox
	@echo "make: asking the example OKF bundle: $(QUESTION)"
	$(VENV)/bin/agentkernel-kb ask "$(QUESTION)" examples/cli/knowledgebase/openai/okf/bundle

test: $(VENV)/bin/nox
	$(VENV)/bin/nox

lint: $(VENV)/bin/nox
	$(VENV)/bin/nox -s lint

unit: $(VENV)/bin/nox
	$(VENV)/bin/nox -s unit
