"""The files a booted test machine gets: deploy/'s units as an operator installs them, and a crew.

The units are copied unchanged (their keys.conf drop-ins too); ``/opt/robotlab/.venv``, the
install location they name, is a link to this test run's environment. One drop-in per unit,
``test.conf``, changes only what a test needs, each line with its reason.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from robotlab.cli.robotlab_cli import main as robotlab_main

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
HANDLERS = REPO / "tests" / "process" / "handlers"
BOOT_TARGET = "robotlab-boot.target"
UNITS = ("robotlab-broker.service", "robotd@.service", "robotlab-crew.target")
HIDDEN_BY_PROTECT_HOME = ("/home", "/root", "/run/user")
FRESH_IN_THE_MACHINE = ("/tmp/", "/run/", "/var/tmp/", "/var/log/")
"""Folders the booted machine gets empty (tests/system/isolated_root.py): a checkout under one
of them (a CI clone in /tmp) is shown to the machine read-only."""
HIDDEN_BY_PRIVATE_TMP = ("/tmp/", "/var/tmp/")
EXIT_LINE = "main process: code=${EXIT_CODE} status=${EXIT_STATUS} result=${SERVICE_RESULT}"
WATCHDOG_SEC = 3
"""The test's WatchdogSec= (the unit's 30 s would take 15 s per ping to observe)."""


@dataclass(frozen=True)
class Crew:
    """A broker and robots: their names, the handler each robotd hosts, the broker's address."""

    url: str
    robots: dict[str, str]
    """Robot name -> the ``--handler`` of its robotd (a module in tests/process/handlers)."""
    key_names: dict[str, list[str]]
    """Robot name -> every bus name its key may use (itself, and what it spawns)."""


def make_keys(folder: Path, crew: Crew) -> Path:
    """Keys made with ``robotlab keys new``: the broker's, one per robot, and the test's admin
    key."""
    runner = CliRunner()
    asks = [["broker"], ["robotlab", "--robot", "*", "--role", "admin"]]
    asks += [[name, *(option for alias in crew.key_names[name] for option in ("--robot", alias))]
             for name in crew.robots]
    for argv in asks:
        result = runner.invoke(robotlab_main, ["keys", "new", *argv, "--dir", str(folder)])
        assert result.exit_code == 0, result.output
    return folder


def install_crew(tree: Path, crew: Crew, keys: Path) -> None:
    """Write ``tree`` as ``/``: units enabled in robotlab-crew.target, settings, keys."""
    system = tree / "etc" / "systemd" / "system"
    for name in UNITS:
        shutil.copy(DEPLOY / name, system / name)
    for folder in ("robotlab-broker.service.d", "robotd@.service.d"):
        shutil.copytree(DEPLOY / folder, system / folder)
    (system / "robotlab-broker.service.d" / "test.conf").write_text(drop_in(watchdog=False))
    (system / "robotd@.service.d" / "test.conf").write_text(drop_in(watchdog=True))
    wants = system / "robotlab-crew.target.wants"
    wants.mkdir()
    (wants / "robotlab-broker.service").symlink_to("../robotlab-broker.service")
    for name in crew.robots:
        (wants / f"robotd@{name}.service").symlink_to("../robotd@.service")
    (system / BOOT_TARGET).write_text("[Unit]\nDescription=robotlab test boot (sysinit only)\n"
                                      "Wants=sysinit.target\nAfter=sysinit.target\n")
    venv = tree / "opt" / "robotlab" / ".venv"
    venv.parent.mkdir(parents=True)
    venv.symlink_to(sys.prefix)
    settings(tree / "etc" / "robotlab", crew)
    shutil.copytree(keys, tree / "etc" / "robotlab" / "keys")  # modes kept: secrets stay 0600 root


def settings(folder: Path, crew: Crew) -> None:
    (folder / "robots").mkdir(parents=True)
    (folder / "broker.env").write_text(f"BROKER_OPTIONS=--bind {crew.url} --ack-timeout 120\n")
    (folder / "robotlab.env").write_text(f"ROBOT_LAB_BROKER={crew.url}\n")
    for name, handler in crew.robots.items():
        (folder / "robots" / f"{name}.env").write_text(f"ROBOTD_OPTIONS=--handler {handler}\n")


def drop_in(watchdog: bool) -> str:
    """The one drop-in a test adds to a deploy unit; everything else is the unit as shipped."""
    lines = ["[Service]", "# The handlers the test's robots host.",
             f"Environment=PYTHONPATH={HANDLERS}",
             "# Litellm must not fetch its price table from the network.",
             "Environment=LITELLM_LOCAL_MODEL_COST_MAP=True",
             "# How the main process ended, into the journal: a stopped unit is unloaded, and its",
             "# ExecMain* properties with it.", f"ExecStopPost=/bin/echo {EXIT_LINE}"]
    if watchdog:
        lines += ["# Short, so the test sees the watchdog fed past its deadline in seconds.",
                  f"WatchdogSec={WATCHDOG_SEC}"]
    private = sorted(str(path) for path in needed_paths()
                     if f"{path}/".startswith(HIDDEN_BY_PRIVATE_TMP))
    if private:
        lines += ["# Under /tmp, which PrivateTmp=yes replaces: an installed crew lives in /opt.",
                  f"BindReadOnlyPaths={' '.join(private)}"]
    hidden = [str(path) for path in needed_paths() if str(path).startswith(HIDDEN_BY_PROTECT_HOME)]
    if hidden:
        lines += ["# Under a home folder, which ProtectHome=yes hides; an installed crew lives in "
                  "/opt.",
                  "# An empty home instead, with only what the test runs from, read-only.",
                  "ProtectHome=tmpfs", f"BindReadOnlyPaths={' '.join(hidden)}"]
    return "\n".join(lines) + "\n"


def shown_paths() -> list[str]:
    """What the units run from that the machine's fresh folders would hide."""
    return sorted(str(path) for path in needed_paths()
                  if f"{path}/".startswith(FRESH_IN_THE_MACHINE))


def needed_paths() -> set[Path]:
    """What the units run from: the checkout, its environment and that environment's Python."""
    return {REPO, Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
