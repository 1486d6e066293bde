"""The project's environment variables (robotlab/environment.py): one prefix, the new name
wins, and an old ``ROBOTLAB_*`` name still works for a release with one warning per process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from robotlab.config.settings import Settings
from robotlab.environment import PREFIX, RENAMED, variable

ROOT = Path(__file__).resolve().parents[3]


def _without_ours(**extra: str) -> dict[str, str]:
    """This process's environment without any variable of ours, plus ``extra``."""
    kept = {key: value for key, value in os.environ.items()
            if not key.startswith(("ROBOT_LAB_", "ROBOTLAB_"))}
    return {**kept, **extra}


def test_the_new_name_wins_over_the_old_and_nothing_is_said() -> None:
    said: list[str] = []
    env = {"ROBOT_LAB_BROKER": "tcp://new:5555", "ROBOTLAB_BROKER": "tcp://old:5555"}
    assert variable("ROBOT_LAB_BROKER", env, warn=said.append) == "tcp://new:5555"
    # Set but empty is set: it still wins, so a unit can clear a value an older file gives.
    assert variable("ROBOT_LAB_KEYS", {"ROBOT_LAB_KEYS": "", "ROBOTLAB_KEYS": "/old"},
                    warn=said.append) == ""
    assert said == []


def test_a_variable_set_under_neither_name_is_none() -> None:
    assert variable("ROBOT_LAB_BROKER", {}) is None
    assert variable("ROBOT_LAB_ENV", {"ROBOTLAB_ENV": "test"}) is None  # never had an old name


def test_only_the_projects_prefix_is_read() -> None:
    with pytest.raises(ValueError, match="ROBOT_LAB_"):
        variable("ROBOTLAB_BROKER", {})


def test_an_old_name_alone_works_and_warns_once_a_process_naming_the_new() -> None:
    # Given only the old names, in a fresh process (the warning is once per process)
    script = ("from robotlab.bus.config import broker_url, keys_dir\n"
              "for _ in range(3):\n"
              "    print(broker_url(), keys_dir())\n")
    env = _without_ours(ROBOTLAB_BROKER="tcp://10.0.0.5:5555", ROBOTLAB_KEYS="/etc/keys")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env=env)
    # Then every read gets the old value
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["tcp://10.0.0.5:5555 /etc/keys"] * 3
    # And each old name is warned about once, naming the variable to set instead
    warnings = [line for line in done.stderr.splitlines() if "deprecated" in line]
    assert sorted(warnings) == [
        "$ROBOTLAB_BROKER is deprecated and read only until robotlab 0.2.0: "
        "set ROBOT_LAB_BROKER instead",
        "$ROBOTLAB_KEYS is deprecated and read only until robotlab 0.2.0: "
        "set ROBOT_LAB_KEYS instead",
    ], done.stderr


def test_the_old_pure_switch_still_runs_the_source_and_says_so_once_logging_is_up() -> None:
    # The bus decides while it is imported, before logging is set up: the line waits for it.
    script = ("from robotlab.bus import native\n"
              "from robotlab.service.logs import configure_logging\n"
              "configure_logging('INFO', 'text')\n"
              "print(native.choose())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env=_without_ours(ROBOTLAB_PURE="1"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() in (["pure"], ["source"])  # "source": no build to skip
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        "robotlab.bus WARNING $ROBOTLAB_PURE is deprecated and read only until robotlab 0.2.0: "
        "set ROBOT_LAB_PURE instead"), done.stderr


def test_every_renamed_variable_is_in_the_configuration_table_beside_its_old_name() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    missing = [f"{new} (was {old})" for new, old in RENAMED.items()
               if f"| `{new}` | `{old}` |" not in page]
    assert not missing, "add these rows to docs/configuration.md's table:\n" + "\n".join(missing)


def test_no_variable_of_ours_is_read_as_a_global_setting_too() -> None:
    # pydantic-settings reads every ROBOT_LAB_<field>: a variable named like a field would set it.
    names = [*RENAMED, "ROBOT_LAB_ENV", "ROBOT_LAB_COMPILE"]
    fields = {name.upper() for name in Settings.model_fields}
    clashes = [name for name in names
               if name.removeprefix(PREFIX).split("__")[0] in fields]
    assert not clashes, clashes
