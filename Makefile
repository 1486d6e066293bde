# Two entry points: `make demo` (the offline demo with real processes) and `make test`.
# Both create the local virtual environment first; nothing is installed outside it.
# Dependencies come from requirements.lock (exact versions with hashes, refreshed by
# `make lock`); pyproject.toml keeps the ranges the library supports.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The bus's hot path compiled with mypyc (robotlab/bus/native.py lists the modules; setup.py
# builds them): built again when a file of their folders changed, so tests and the demo run
# the compiled code of the source they see (a stale build would run as pure Python).
COMPILED := $(VENV)/.compiled
NATIVE_SOURCES := setup.py $(wildcard robotlab/bus/*.py robotlab/bus/*/*.py broker/*.py)
TYPETREE := $(VENV)/typecheck/robotlab
LOCK := requirements.lock
SOURCES := robotlab broker robotd cli
# pytest-xdist workers (auto: one per core). --dist loadgroup spreads tests one by one, and
# keeps tests marked @pytest.mark.xdist_group(name) on one worker (none need it today).
WORKERS ?= auto

.PHONY: demo test test-pure test-model venv compile lint types lock bench docs clean

venv: $(STAMP) $(COMPILED)

# $(call ticking,COMMAND,WHAT) runs a long step that prints little (pip installing, a C
# compiler on one big file) with a line every 10 s saying it is still at work, so a cold
# set-up never sits silent; the shell echoes WHAT each time, so $$(...) in it can count.
ticking = ( n=0; while sleep 10 >/dev/null 2>&1 && kill -0 $$$$ 2>/dev/null; do n=$$((n + 10)); echo "make: $(2) ($${n}s)"; done ) & \
	ticker=$$!; $(1); status=$$?; kill $$ticker; exit $$status
INSTALLED = $$(ls -d $(VENV)/lib/python3*/site-packages/*.dist-info 2>/dev/null | wc -l)

# The lock is the whole set, so pip installs it without resolving dependencies (--no-deps):
# left to resolve, pip reads a dependency asked for with an extra, as litellm asks for
# httpx[http2], as a second requirement that the lock's pin does not cover, takes the
# newest release from PyPI and refuses it in hash mode. `pip check` then proves the set is
# complete and consistent. The locked set includes pip, setuptools and wheel, so the project
# is then installed without build isolation (nothing unlocked is fetched) and without
# dependencies (pip's hash mode cannot hash an editable install). The editable install does
# not compile (ROBOT_LAB_COMPILE=0): $(COMPILED) does, once, where its progress shows.
$(STAMP): pyproject.toml setup.py $(LOCK)
	@echo "make: installing robotlab and its dev tools into $(VENV) (a minute or two the first time)..."
	$(PYTHON) -m venv $(VENV)
	@echo "make: installing the $$(grep -c '^[a-z0-9]' $(LOCK)) locked packages (pip downloads or finds each, then installs them all)"
	@$(call ticking,$(BIN)/python -m pip install --quiet --no-deps --require-hashes -r $(LOCK),installing the locked packages: $(INSTALLED) in $(VENV) so far)
	ROBOT_LAB_COMPILE=0 $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $(STAMP)
	@echo "make: $(VENV) is ready"

compile: $(COMPILED)

$(COMPILED): $(STAMP) $(NATIVE_SOURCES)
	@echo "make: compiling the bus's hot path with mypyc (a minute the first time)..."
	@$(call ticking,$(BIN)/python setup.py --quiet build_ext --inplace,still compiling the bus's hot path)
	touch $(COMPILED)

# mypy cannot read setuptools' editable import hook, so it finds broker/, robotd/ and cli/
# under their installed names through these links ([tool.mypy] mypy_path).
$(TYPETREE)/cli:
	mkdir -p $(TYPETREE)
	for folder in broker robotd cli; do ln -sfn ../../../$$folder $(TYPETREE)/$$folder; done

demo: $(COMPILED)
	$(BIN)/python -m robotlab.demo

# The real-model tier (tests/model) is its own target: it needs a model server, built once.
test: lint $(COMPILED)
	$(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup --ignore=tests/model

# The bus's guarantees again on its pure-Python source (ROBOT_LAB_PURE=1), the fallback that runs
# where the mypyc build is absent or stale: the bus and broker unit tests, then delivery,
# durability (the journal across restarts), holds, pools, standby and hostile peers with real
# processes, which inherit the variable. tests/unit/bus/conftest.py checks the source runs.
PURE_TESTS := tests/unit/bus tests/process/test_bus_processes.py tests/process/test_durability_processes.py \
	tests/process/test_reply_limit_processes.py tests/process/test_pool_processes.py \
	tests/process/test_standby_failover_processes.py tests/process/test_standby_claims_processes.py \
	tests/process/test_hostile_bus.py
test-pure: $(STAMP)
	ROBOT_LAB_PURE=1 $(BIN)/python -m pytest -n $(WORKERS) --dist loadgroup $(PURE_TESTS)

# Builds llama.cpp's server and fetches the model once (cached outside the clone, in
# ~/.cache/robotlab/model-tier; a warm run starts in seconds), then runs tests/model against
# a real server process, one test at a time: the server generates one reply at a time.
test-model: $(COMPILED)
	@echo "make: installing the model tier's server and model (cached; the first time builds llama.cpp, minutes)..."
	bash tests/model/install_server.sh > $(VENV)/model-tier.env
	set -a && . ./$(VENV)/model-tier.env && set +a && $(BIN)/python -m pytest tests/model -p no:xdist -v --timeout 900

lint: $(STAMP) $(TYPETREE)/cli
	$(BIN)/ruff check $(SOURCES) tests bench setup.py
	$(BIN)/mypy

# mypy alone; `make lint` (and so `make test`) runs it after ruff. Settings: [tool.mypy].
types: $(STAMP) $(TYPETREE)/cli
	$(BIN)/mypy

# Universal resolution: one lock for every platform and Python the project supports. The
# build backend's requirements are read from pyproject.toml and locked with the rest.
lock: $(BIN)/uv
	$(BIN)/python -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], "pip", sep="\n")' \
		| $(BIN)/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
			--extra dev --custom-compile-command 'make lock' pyproject.toml - -o $(LOCK)

# uv comes with the venv; an existing one serves even when pyproject.toml is newer than the
# lock (the usual reason to run `make lock`).
$(BIN)/uv:
	$(MAKE) venv

bench: $(COMPILED)
	$(BIN)/python bench/bus.py

# The documentation site (mkdocs, in the dev extra) into site/, failing on any broken link.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) build site *.egg-info
	rm -f robotlab/bus/*.so robotlab/bus/*/*.so broker/*.so
