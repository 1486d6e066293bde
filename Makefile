# Two entry points: `make demo` (the offline demo with real processes) and `make test`.
# Both create the local virtual environment first; nothing is installed outside it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test venv lint bench docs clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@echo "make: installing robotlab and its dev tools into $(VENV) (a minute or two the first time)..."
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)
	@echo "make: $(VENV) is ready"

demo: $(STAMP)
	$(BIN)/python -m robotlab.demo

test: $(STAMP)
	$(BIN)/ruff check robotlab broker robotd cli tests bench
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check robotlab broker robotd cli tests bench

bench: $(STAMP)
	$(BIN)/python bench/bus.py

# The documentation site (mkdocs, in the dev extra) into site/, failing on any broken link.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build site *.egg-info
