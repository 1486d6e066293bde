"""``Robot.spawn``: children forked as robotds by the warm fork server, supervised by their parent.

The fork server is started by the first spawn in this process and reused by the tests after
that, but for the tests of the fork server's own start, which stop it and start a fresh one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

import psutil
import pytest
from click.testing import CliRunner

from robotlab import BoundaryError, ConfigError, Robot, RunConfig, bus, create_network
from robotlab.cli.robotlab_cli import main as robotlab_main
from robotlab.robot.requests import RUN_TYPE
from robotlab.robot.spawn import fork_server, start_fork_server, stop_fork_server
from robotlab.testing import requests_seen, serve_script
from tests.process.conftest import Processes, live
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def stop_children(url: str, parent: str) -> None:
    """SIGTERM every robot on the broker whose parent is ``parent``, and wait until they are
    gone."""
    pids = [row["pid"] for row in _ps(url) if row.get("parent") == parent]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    wait_until(lambda: not any(_alive(pid) for pid in pids), timeout=10,
               message=f"children of {parent} stopped")


@pytest.fixture
def api() -> Iterator[str]:
    """A script server with plenty of plain answers."""
    with serve_script([{"content": f"answer {i}"} for i in range(20)]) as url:
        yield url


@pytest.fixture
def boss(broker: str, api: str) -> Iterator[Robot]:
    """A parent robot in the test process: a local model on the script server."""
    robot = Robot(name="boss", bus=broker, model="llama3.2", provider="ollama", api_base=api)
    yield robot
    stop_children(broker, "boss")
    robot.leave_bus()


def test_a_child_inherits_model_provider_and_api_base_and_an_override_wins(boss: Robot, broker: str,
                                                                           api: str) -> None:
    kid = boss.spawn(name="kid", system_prompt="You help.")
    other = boss.spawn(name="other", model="x")
    assert _settings(kid.info()) == ("llama3.2", "ollama", api, "You help.")
    assert _settings(other.info()) == ("x", "ollama", api, None)
    result = CliRunner().invoke(robotlab_main, ["ps", "--broker", broker, "--json"])
    parents = {row["name"]: row["parent"] for row in json.loads(result.output)}
    assert parents == {"boss": None, "kid": "boss", "other": "boss"}


def test_the_handle_runs_asks_messages_and_stops_the_child(broker: str, api: str) -> None:
    boss = Robot(name="boss", bus=broker, model="openai/scripted", api_base=api)
    try:
        kid = boss.spawn(name="kid", system_prompt="You help.")
        assert kid.run("first").reply == "answer 0"
        assert kid.ask("second", timeout=10).content == "answer 1"
        sent = kid.send_message("third")
        wait_until(lambda: boss.outbox[sent.key]["status"] == "replied", timeout=10,
                   message="kid replied")
        assert boss.outbox[sent.key]["replies"][0].content == "answer 2"
        assert kid.stop() and not kid.alive()
        wait_until(lambda: not live(broker, "kid"), message="kid left the bus")
    finally:
        stop_children(broker, "boss")
        boss.leave_bus()


def test_a_child_stopped_mid_step_sends_its_whole_reply_before_it_exits(broker: str) -> None:
    # A reply of megabytes is still queued in ZeroMQ when the drain ends, as any reply is on a
    # loaded machine whose ZeroMQ thread has not run yet; a spawned robotd leaves with os._exit.
    reply = "x" * 8_000_000
    with serve_script([{"content": reply, "delay": 1}]) as api:
        boss = Robot(name="boss", bus=broker, model="openai/scripted", api_base=api)
        try:
            kid = boss.spawn(name="kid", system_prompt="You answer.")
            with bus.connect(broker, name="asker", timeout=10) as asker:
                work = asker.send_request("kid", {"message": "go", "kwargs": {}}, type=RUN_TYPE)
                wait_until(lambda: requests_seen(api), timeout=30,
                           message="the kid's model call started")
                # When the kid is stopped during its model call
                os.kill(kid.pid, signal.SIGTERM)
                # Then its reply arrives whole
                assert work.reply(60).content["reply"] == reply
        finally:
            stop_children(broker, "boss")
            boss.leave_bus()


def test_a_parent_without_a_bus_gets_one_its_children_join(api: str) -> None:
    solo = Robot(name="solo", model="openai/scripted", api_base=api)
    try:
        kid = solo.spawn(name="kid")
        assert solo.bus.url.startswith("ipc://")
        assert kid.run("hello").reply == "answer 0"
        kid.stop()
    finally:
        solo.leave_bus()


def test_bad_spawns_are_refused_with_the_reason(boss: Robot) -> None:
    with pytest.raises(ConfigError, match="template 'no_such_template' not found"):
        boss.spawn(name="kid", template="no_such_template")
    with pytest.raises(ConfigError, match="unexpected keyword arguments: no_such_setting"):
        boss.spawn(name="kid", no_such_setting=1)
    with pytest.raises(BoundaryError, match="local_tools cannot cross"):
        boss.spawn(name="kid", local_tools=[object()])
    inproc = Robot(name="inproc").with_bus(bus.EmbeddedBroker().start())
    with pytest.raises(ConfigError, match="inproc:// bus"):
        inproc.spawn(name="kid")
    inproc.leave_bus()


def test_a_handle_is_a_network_member_that_shares_the_network_memory(broker: str, api: str) -> None:
    lead = Robot(name="lead", bus=broker, model="openai/scripted", api_base=api)
    net = create_network(name="crew", config=RunConfig(bus=lead.bus))
    changes: list[Any] = []
    net.memory.subscribe("brief", callback=changes.append)
    try:
        net.task("draft", lead.spawn(name="kid"), memory={"brief": "short"})
        result = net.run("Draft it.")
        net.memory.flush(2)
    finally:
        net.close()
        stop_children(broker, "lead")
        lead.leave_bus()
    assert result.reply == "answer 0"
    assert [(change.value, change.writer) for change in changes] == [("short", "kid")]


def test_the_fork_server_answers_a_malformed_request_and_keeps_serving(boss: Robot) -> None:
    boss.spawn(name="first")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(fork_server().path)
        conn.sendall(b"not json\n")
        answer = json.loads(conn.makefile("rb").readline())
    assert answer["ok"] is False and "bad fork request" in answer["error"]
    assert boss.spawn(name="second").info()["name"] == "second"


def test_the_warm_fork_server_runs_one_thread_so_children_inherit_no_half_held_lock(
        boss: Robot) -> None:
    # Given a fork server whose warm twin serves, warmed by real model calls (robotd/warmup.py:
    # warm_model_call)
    boss.spawn(name="probe").info()
    server = start_fork_server(warm=True)
    assert server.process is not None, "this test process started the fork server"
    assert server.warm_pid is not None
    # Then each of its processes runs only its main thread: a fork copies no other thread, so any
    # other one would leave its locks held forever in every child
    assert psutil.Process(server.process.pid).num_threads() == 1
    assert psutil.Process(server.warm_pid).num_threads() == 1
    # And the next child is forked by the warm twin
    assert psutil.Process(boss.spawn(name="late").pid).ppid() == server.warm_pid


def test_a_first_spawn_does_not_wait_for_the_warm_up_and_later_ones_share_it(boss: Robot) -> None:
    # Given no fork server in this process yet
    stop_fork_server()
    # When boss spawns at once
    early = boss.spawn(name="early", model="openai/scripted", provider=None)
    server = fork_server()
    # Then the child comes from the fork server's first process, before its warm-up ended, and
    # runs all the same (it loaded the model client itself)
    assert server.process is not None and psutil.Process(early.pid).ppid() == server.process.pid
    assert early.run("hi").reply == "answer 0"
    # And once the warm twin serves, children come from it
    assert server.wait_warm() is True
    assert psutil.Process(boss.spawn(name="late").pid).ppid() == server.warm_pid


def test_a_warm_up_that_dies_leaves_a_fork_server_that_still_spawns(boss: Robot) -> None:
    # Given a fresh fork server whose warm twin is killed during its warm-up
    stop_fork_server()
    server = start_fork_server()
    server.wait_ready()
    assert server.process is not None
    twin = psutil.Process(server.process.pid).children()[0]
    twin.kill()
    # Then the server says it stays cold, and a spawn still gets a working child
    assert server.wait_warm() is False
    assert boss.spawn(name="cold").info()["name"] == "cold"


def test_a_warm_server_that_dies_is_replaced_by_the_next_spawn(boss: Robot) -> None:
    # Given a fork server whose warm twin serves
    stop_fork_server()
    server = start_fork_server(warm=True)
    assert server.process is not None and server.warm_pid is not None
    # When the warm twin dies
    psutil.Process(server.warm_pid).kill()
    # Then the fork server exits (nothing accepts any more), and the next spawn starts another
    wait_until(lambda: not server.alive(), timeout=10, message="the fork server exited")
    assert boss.spawn(name="after").info()["name"] == "after"
    assert fork_server() is not server


def parent_main() -> None:
    """The parent process of the supervision test: spawn two children, print their pids, wait."""
    parent = Robot(name="mortal", bus=os.environ["TEST_BROKER"], model="openai/scripted")
    kid = parent.spawn(name="kid")
    loner = parent.spawn(name="loner", detach=True)
    print(json.dumps({"kid": kid.pid, "loner": loner.pid}), flush=True)
    signal.sigwait({signal.SIGTERM})


def test_killing_the_parent_ends_its_children_but_not_a_detached_one(
        processes: Processes, broker: str) -> None:
    argv = [sys.executable, "-c",
            "from tests.process.test_spawn_processes import parent_main; parent_main()"]
    parent = processes.start(argv, env={"TEST_BROKER": broker}, name="parent")
    pids = wait_until(lambda: _json_line(parent.output()), timeout=120,
                      message="the parent spawned its children")
    try:
        os.kill(parent.pid, signal.SIGKILL)
        wait_until(lambda: not _alive(pids["kid"]), timeout=10,
                   message="the child exited with its parent")
        assert _alive(pids["loner"]) and live(broker, "loner")
    finally:
        stop_children(broker, "mortal")


def _settings(info: dict[str, Any]) -> tuple[Any, ...]:
    return info["model"], info["provider"], info["api_base"], info["system_prompt"]


def _ps(url: str) -> list[dict[str, Any]]:
    with bus.connect(url, name="fixture-ps", timeout=2) as client:
        return client.admin("ps")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _json_line(text: str) -> dict[str, int] | None:
    for line in text.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return None
