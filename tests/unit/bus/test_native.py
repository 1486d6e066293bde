"""The compiled hot path (robotlab/bus/native.py): all of it or none runs, never a stale build."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from robotlab.bus import native

ROOT = Path(__file__).resolve().parents[3]


def _origin(name: str) -> str:
    module = sys.modules.get(name) or importlib.import_module(name)
    return str(module.__file__)


def test_the_listed_modules_run_all_compiled_or_all_from_source() -> None:
    kinds = {name: _origin(name).endswith(".py") for name in native.MODULES}
    assert len(set(kinds.values())) == 1, f"a mix of compiled and source modules: {kinds}"
    assert all(kinds.values()) == (native.choose() != "compiled")


def test_a_dev_install_runs_the_compiled_bus() -> None:
    # make venv / make test compile with the locked mypyc; a stale or missing build runs the
    # source, which is correct but slow, and the benchmarks would measure the wrong thing.
    pure = os.environ.get("ROBOT_LAB_PURE", "") not in ("", "0")
    if importlib.util.find_spec("mypyc") is None or pure:
        pytest.skip("no mypyc here, or the pure source was asked for: nothing is compiled")
    assert native.choose() == "compiled", ("the bus's compiled modules are stale or missing: run "
                                           "`make compile`")


def test_a_source_newer_than_the_build_is_stale(tmp_path: Path) -> None:
    library = tmp_path / "group.so"
    library.write_bytes(b"")
    built = {f"{native.GROUP}__mypyc": library, **{name: library for name in native.MODULES}}
    os.utime(library, (0, 0))  # built in 1970: every source has changed since
    assert len(native.stale_sources(built)) == len(native.MODULES)
    future = time.time() + 3600
    os.utime(library, (future, future))
    assert native.stale_sources(built) == []
    # a module the build left out is stale, however new the build
    del built["robotlab.bus.member.link"]
    assert [Path(p).name for p in native.stale_sources(built)] == ["link.py"]
    assert native.stale_sources({}) == [f"the group library {native.GROUP}__mypyc"]


def test_an_installed_bus_is_judged_by_what_was_compiled_not_by_file_times(
        tmp_path: Path) -> None:
    # pip writes a wheel's files in any order: a source written a moment after its extension
    # is not an edit, and the compiled bus runs (it ran the pure one, saying the source changed)
    library = tmp_path / "group.so"
    library.write_bytes(b"")
    built = {f"{native.GROUP}__mypyc": library, **{name: library for name in native.MODULES}}
    os.utime(library, (0, 0))
    assert native.stale_sources(built, by_time=False) == []
    del built["robotlab.bus.member.link"]
    assert [Path(p).name for p in native.stale_sources(built, by_time=False)] == ["link.py"]
    assert native.in_checkout()  # these tests run from one: times count here


def test_the_pure_source_runs_a_round_trip_when_asked() -> None:
    script = (
        "import sys\n"
        "from robotlab import bus\n"
        "from robotlab.bus import native\n"
        "from robotlab.bus.wire import protocol\n"
        "import robotlab.broker.deliveries as deliveries\n"
        "assert protocol.__file__.endswith('.py') and deliveries.__file__.endswith('.py'), "
        "protocol.__file__\n"
        "with bus.connect(name='alice') as alice, bus.connect(alice.url, name='bob') as bob:\n"
        "    bob.on_message(lambda m: m.content * 2)\n"
        "    print(native.choose(), alice.request('bob', 21, timeout=10).content)\n"
    )
    env = {**os.environ, "ROBOT_LAB_PURE": "1"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() in (["pure", "42"], ["source", "42"])


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_warning_given_before_logging_is_set_up_comes_out_in_its_format(log_format: str) -> None:
    # The stale-build warning is decided while an entry point imports, before it reads
    # --log-format: it waits for configure_logging instead of printing a plain line first.
    script = (
        "from robotlab.bus import native\n"
        "from robotlab.service.logs import configure_logging\n"
        "native.announce('robotlab: link.py changed since the bus was compiled')\n"
        f"configure_logging('INFO', {log_format!r})\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, "ROBOT_LAB_PURE": ""})
    lines = done.stderr.splitlines()
    assert done.returncode == 0 and len(lines) == 1, done.stderr
    if log_format == "json":
        assert (json.loads(lines[0])["message"]
                == "robotlab: link.py changed since the bus was compiled")
    else:
        assert lines[0].endswith("robotlab.bus WARNING robotlab: link.py changed since the bus was "
                                 "compiled")


def test_a_warning_nobody_sets_logging_up_for_comes_out_at_exit() -> None:
    script = ("from robotlab.bus import native\nnative.announce('robotlab: stale build')\n"
              "print('ran')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0 and done.stdout == "ran\n"
    assert done.stderr == "robotlab: stale build\n"
