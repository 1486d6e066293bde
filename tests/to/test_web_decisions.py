"""A robot-to run's pending decision in the web console: a real run on a real broker raises a
blocking decision for alice; the page shows whom it went to, its question and until when it is
waited for, from the run's heartbeats, and drops it once she answers."""

from __future__ import annotations

import contextlib
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright import sync_api

from tests.process.conftest import (  # noqa: F401 (fixtures)
    broker,
    endpoint,
    processes,
    start_broker,
    state_directory,
)
from tests.process.person import Person
from tests.process.test_web_browser import page  # noqa: F401 (the fixture)
from tests.process.test_web_processes import view, web  # noqa: F401 (the fixture)
from tests.to import conftest as to
from tests.waiting import wait_until

pytestmark = pytest.mark.process

DECISION = re.compile(r"^d-\S+ \(blocking\) to alice: 404 or 410\?$")
UNTIL = re.compile(r"^waited for until \d\d:\d\d:\d\d \([0-9]m [0-5][0-9]s left\)$")


def _asking(url: str) -> dict | None:
    """The ``stats`` of the run on the bus once its heartbeat counts a pending decision and the
    run waits for it.

    The decision is pending from the robot's call on, while its iteration goes on (phase
    ``robot``); the wait, with its deadline, begins only when the iteration ends, which on a
    loaded machine can be longer after than the page's own expectations wait."""
    rows = [row["stats"] for row in view(url)["members"]
            if row["stats"].get("decisions") and row["stats"].get("phase") == "awaiting decision"]
    return rows[0] if rows else None


TURNS = [to.call("request_decision", question="404 or 410?", recommendation="410", blocking=True),
         to.submit(False, "waiting for the answer"), to.DONE, *to.write_and_submit("a.txt", "x\n")]


@contextlib.contextmanager
def asking_alice(repo: Path, tmp_path: Path, url: str) -> Iterator[tuple[Person, subprocess.Popen]]:
    """alice at ``robotlab human``, and a run on the bus whose robot asks her a blocking decision;
    both stopped at the end (the run killed if it is still going)."""
    with contextlib.ExitStack() as stack:
        alice = Person(url, "alice", tmp_path / "alice.log")
        stack.callback(alice.stop)
        api = stack.enter_context(to.script_server_process(tmp_path, TURNS))
        proc = to.robot_to_process(repo, api, "--broker", url, "--ask", "alice", "--local-guards",
                                   "--max-iterations", "2", "--decision-poll", "0.2",
                                   "--decision-timeout", "120")
        stack.callback(_reap, proc)
        yield alice, proc


def _reap(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_a_pending_decision_shows_whom_it_went_to_and_until_when(
        repo: Path, tmp_path: Path, broker: str, web, page) -> None:  # noqa: F811
    expect = sync_api.expect
    url, _ = web()
    with asking_alice(repo, tmp_path, broker) as (alice, proc):
        page.goto(url)
        stats = wait_until(lambda: _asking(url), timeout=90,
                           message="the run's decision in its heartbeat")
        row = page.locator("#runs tbody tr").filter(has_text="awaiting decision")
        expect(row.locator("td.decisions .decision")).to_have_text(DECISION)
        expect(row.locator("td.decisions .until")).to_have_text(UNTIL)
        alice.sees("404 or 410?", timeout=90)
        alice.types("use 410")
        expect(page.locator("#runs")).not_to_contain_text("404 or 410?")
        _, err = proc.communicate(timeout=120)
    assert stats["decisions"] == 1 and DECISION.match(stats["decision"]), stats
    assert time.time() < stats["decision_until"] <= time.time() + 120
    assert proc.returncode == 0, err
