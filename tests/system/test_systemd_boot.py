"""deploy/'s units under a real systemd: PID 1 of fresh namespaces, on a root isolated from the
host.

One boot, one story (each step needs the one before): the crew target starts a broker and two
robotds with their keys as credentials and their own dynamic users; both are welcomed; the
watchdog is fed past its deadline; ``kill -9`` of a robotd is undone by systemd; a robot spawns
a child through its fork server under the hardened unit; ``systemctl stop`` of the target lets
the delivery in hand (bob's) and the child's model call finish and every process exit 0 after
SIGTERM. How the root is made, and why it cannot touch the host: tests/system/machine.py and
isolated_root.py.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotlab import bus
from robotlab.errors import ReplyTimeout
from robotlab.robot.requests import RUN_TYPE
from robotlab.testing import requests_seen, serve_script
from tests.process.conftest import free_tcp_url
from tests.system.crew import BOOT_TARGET, WATCHDOG_SEC, Crew, install_crew, make_keys, shown_paths
from tests.system.machine import Machine, base_tree, boot, canaries, lost, plant
from tests.waiting import wait_until

pytestmark = pytest.mark.process

START = 90  # seconds: robotds import the bus and the model client cold on a loaded machine
ROBOTS = {"bob": "handlers:slow", "alice": "handlers:spawn_child"}
KEY_NAMES = {"bob": ["bob"], "alice": ["alice", "alice-*"]}


@pytest.fixture
def crew(tmp_path: Path) -> Crew:
    return Crew(url=free_tcp_url(), robots=ROBOTS, key_names=KEY_NAMES)


@pytest.fixture
def keys(tmp_path: Path, crew: Crew) -> Path:
    return make_keys(tmp_path / "keys", crew)


@pytest.fixture
def planted(tmp_path: Path) -> Iterator[list[Path]]:
    with canaries(tmp_path) as made:
        yield made
        assert not lost(made), "a canary deleted inside the booted root is gone from the host"


@pytest.fixture
def machine(tmp_path: Path, crew: Crew, keys: Path, planted: list[Path]) -> Iterator[Machine]:
    tree = tmp_path / "tree"
    base_tree(tree)
    install_crew(tree, crew, keys)
    with boot(tmp_path, tree, BOOT_TARGET, planted, shown_paths()) as booted:
        yield booted


@pytest.fixture
def started(machine: Machine, crew: Crew) -> Machine:
    """The crew target started by the booted systemd, each robotd active: READY=1 once welcomed."""
    machine.run("systemctl", "start", "--no-block", "robotlab-crew.target")
    for name in crew.robots:
        wait_until(lambda name=name: active(machine, f"robotd@{name}.service"), timeout=START,
                   message=f"robotd@{name} active\n{machine.journal(f'robotd@{name}')}")
    return machine


@pytest.fixture
def admin(started: Machine, crew: Crew, keys: Path) -> Iterator[bus.BusClient]:
    """The test's own connection with the admin key (``robotlab ps`` makes the same call)."""
    client = bus.BusClient(crew.url, name="robotlab", role="client",
                           keys=bus.KeyConfig.load(keys, "robotlab"))
    yield client.start(timeout=30)
    client.close()


def test_the_crew_target_boots_restarts_spawns_and_drains(started: Machine, admin: bus.BusClient,
                                                          crew: Crew) -> None:
    machine = started
    # Given the crew target started, each robot welcomed by the broker as the unit's main process
    assert welcomed(admin, machine, "bob") and welcomed(admin, machine, "alice")
    assert separate_users_and_credentials(machine)
    with serve_script([{"content": "drained", "delay": 2}]) as api:
        # alice (a hardened unit: seccomp filter, no namespaces) spawns a child through her fork
        # server, which imports the model client meanwhile
        spawning = admin.send_request("alice", {"broker": crew.url, "parent": "alice-boss",
                                                "child": "alice-kid", "api_base": api})

        # Then bob's watchdog is fed past its deadline, and bob lives on
        watched_past_deadline(machine, "robotd@bob.service")

        # When bob is killed with SIGKILL, systemd starts a new one, welcomed again
        first = machine.show("robotd@bob.service", "MainPID")["MainPID"]
        machine.run("kill", "-KILL", first)
        wait_until(lambda: restarted(machine, "robotd@bob.service", first), timeout=START,
                   message=f"robotd@bob restarted\n{machine.journal('robotd@bob')}")
        wait_until(lambda: welcomed(admin, machine, "bob"), timeout=30,
                   message="the broker lists only the new bob (the killed one fell silent)")

        # And the child is on the bus, its parent named
        child = answer(spawning, machine, "robotd@alice", timeout=START)
        kids = [(row["parent"], row["pid"]) for row in admin.admin("ps")
                if row["name"] == "alice-kid"]
        assert kids == [("alice-boss", child["pid"])], (kids, child)

        # When the target stops while bob and the child each have work in hand
        bob_work = admin.send_request("bob", "2:started")
        kid_work = admin.send_request("alice-kid", {"message": "go", "kwargs": {}}, type=RUN_TYPE)
        wait_until(lambda: machine.run("test", "-e", "/var/lib/robotlab/bob/started",
                                       check=False).returncode == 0,
                   timeout=30, message="bob's handler started")
        wait_until(lambda: requests_seen(api), timeout=30, message="the child's model call started")
        machine.run("systemctl", "stop", "robotlab-crew.target", timeout=120)

        # Then both finished it, and every process exited 0 by SIGTERM: none was killed
        assert answer(bob_work, machine, "robotd@bob") == "slept 2"
        assert answer(kid_work, machine, "robotd@alice")["reply"] == "drained"
    for unit in ("robotd@bob", "robotd@alice", "robotlab-broker"):
        assert last_exit(machine, unit) == ("main process: code=exited status=0 "
                                            "result=success"), machine.journal(unit)
        assert "Killing process" not in machine.journal(unit)
    # its drain line, just before exit 0
    assert "robotd bob stopped" in machine.journal("robotd@bob")


def test_systemd_is_not_started_when_a_canary_is_not_behind_the_overlay(
        tmp_path: Path, planted: list[Path]) -> None:
    # Given a canary on another of the host's file systems, which an overlay of / cannot show
    shm = Path("/dev/shm")
    if not os.path.ismount(shm):
        pytest.skip("/dev/shm is not a file system of its own here")
    outside = shm / f"sysd-canary-{uuid.uuid4().hex[:8]}" / "canary"
    plant(outside)
    tree = tmp_path / "tree"
    base_tree(tree)
    try:
        # Then the preparer refuses before systemd exists, and the canary is untouched
        with pytest.raises(pytest.fail.Exception,
                           match="not isolated from the host, systemd not started"):
            with boot(tmp_path, tree, BOOT_TARGET, [*planted, outside], shown_paths()):
                pass
        assert not lost([outside])
    finally:
        shutil.rmtree(outside.parent)


def active(machine: Machine, unit: str) -> bool:
    state = machine.show(unit, "ActiveState", "SubState")
    assert state["ActiveState"] != "failed", f"{unit} failed: {state}\n{machine.journal(unit)}"
    return state["ActiveState"] == "active"


def welcomed(admin: bus.BusClient, machine: Machine, name: str) -> bool:
    """The broker lists ``name`` with the pid systemd knows as the unit's MainPID."""
    main_pid = int(machine.show(f"robotd@{name}.service", "MainPID")["MainPID"])
    rows = [row for row in admin.admin("ps") if row["name"] == name]
    return [row["pid"] for row in rows] == [main_pid]


def separate_users_and_credentials(machine: Machine) -> bool:
    """Each robot runs as its own dynamic user, with its key as a credential only that user owns."""
    uids = {}
    for name in ("bob", "alice"):
        unit = f"robotd@{name}.service"
        pid = machine.show(unit, "MainPID")["MainPID"]
        uids[name] = machine.run("stat", "-c", "%u", f"/proc/{pid}").stdout.strip()
        credential = f"/run/credentials/{unit}/robot.key_secret"
        owner = machine.run("stat", "-c", "%u %a", credential).stdout.split()
        assert owner[0] == uids[name] and owner[1] in ("400", "440"), (credential, owner)
        environ = machine.run("cat", f"/proc/{pid}/environ").stdout.split("\0")
        assert f"ROBOT_LAB_KEY={credential}" in environ, environ
    assert len(set(uids.values())) == 2 and "0" not in uids.values(), uids
    return True


def watched_past_deadline(machine: Machine, unit: str) -> None:
    """Pings keep coming after WatchdogSec has passed since the start, from the same process."""
    start = machine.show(unit, "ExecMainStartTimestampMonotonic", "MainPID", "NRestarts")
    deadline = int(start["ExecMainStartTimestampMonotonic"]) + WATCHDOG_SEC * 1_000_000

    def fed_late() -> bool:
        now = machine.show(unit, "WatchdogTimestampMonotonic", "MainPID", "NRestarts",
                           "ActiveState")
        assert (now["MainPID"], now["NRestarts"],
                now["ActiveState"]) == (start["MainPID"], start["NRestarts"], "active")
        return int(now["WatchdogTimestampMonotonic"]) > deadline

    wait_until(fed_late, timeout=WATCHDOG_SEC * 5,
               message=f"{unit} fed its watchdog after {WATCHDOG_SEC}s")


def restarted(machine: Machine, unit: str, old_pid: str) -> bool:
    now = machine.show(unit, "MainPID", "ActiveState", "NRestarts")
    return (now["ActiveState"] == "active" and now["MainPID"] not in (old_pid, "0")
            and now["NRestarts"] == "1")


def answer(tracker: bus.Tracker, machine: Machine, unit: str, timeout: float = 30) -> Any:
    """The reply's content; on a timeout, the failure shows the unit's journal and the broker's
    (whether the replier said BYE, went silent, or was never heard from again)."""
    try:
        return tracker.reply(timeout).content
    except ReplyTimeout as exc:
        broker = machine.journal("robotlab-broker")
        raise AssertionError(f"{exc}\n{machine.journal(unit)}\n--- the broker:\n{broker}") from exc


def last_exit(machine: Machine, unit: str) -> str:
    """The unit's last ExecStopPost line (crew.EXIT_LINE), once it is inactive: how its main process
    ended."""
    def ended() -> str | None:
        if machine.show(f"{unit}.service",
                        "ActiveState")["ActiveState"] not in ("inactive", "failed"):
            return None  # `systemctl stop` of the target does not wait for its parts
        lines = [line for line in machine.journal(unit).splitlines()
                 if line.startswith("main process: ")]
        return lines[-1] if lines else None

    return wait_until(ended, timeout=60, message=f"{unit} stopped")
