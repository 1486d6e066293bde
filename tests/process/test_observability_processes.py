"""Traces across real processes, and each robot's cost and load in `robotlab ps` and `top`.

A broker, a robotd hosting a robot whose template gives it a tool, and `robotlab send --wait`
from the command line, each exporting its spans to its own JSON-lines file (the ``jsonl``
exporter, set by environment as an operator would). The model is the script server.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Processes, broker_argv, free_tcp_url, is_live, ping
from tests.waiting import wait_until

pytestmark = pytest.mark.process

CLOCK_TEMPLATE = """---
description: tells the time
tools: ["handlers:clock"]
---
You tell the time with the clock tool.
"""
TURNS = [
    {"tool_calls": [{"name": "clock", "arguments": {"city": "Oslo"}, "id": "call_1"}],
     "usage": {"prompt_tokens": 30, "completion_tokens": 7}},
    {"content": "It is 12:00 in Oslo.", "usage": {"prompt_tokens": 50, "completion_tokens": 9}},
]
RUN_WITH_TOOLS = json.dumps({"message": "What time is it in Oslo?", "kwargs": {"tools": "inherit"}})


def traced(tmp_path: Path, who: str) -> dict[str, str]:
    """The environment that makes a process export its spans to ``tmp_path/who.jsonl``."""
    return {"OTEL_TRACES_EXPORTER": "jsonl",
            "ROBOT_LAB_TRACES_FILE": str(tmp_path / f"{who}.jsonl"),
            "OTEL_BSP_SCHEDULE_DELAY": "50", "OTEL_SERVICE_NAME": who}


def spans_in(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def cli(*args: str, env: dict[str, str] | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run ``robotlab ARGS`` with the test's environment plus ``env``."""
    return subprocess.run([sys.executable, "-m", "robotlab.cli", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=timeout)


@pytest.fixture
def script_api() -> Iterator[Any]:
    """``script_api(turns) -> url``: script servers for the test, stopped at teardown."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield lambda turns: stack.enter_context(serve_script(turns))


def start_crew(processes: Processes, tmp_path: Path, endpoint: str, api: str, model: str,
               trace: bool = False) -> None:
    """A broker and robotd ``clock`` (its template, ``model`` at ``api``, serving), both live;
    traced if asked."""
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "clock.md").write_text(CLOCK_TEMPLATE)
    processes.keep(broker_argv(endpoint), lambda proc: ping(endpoint),
                   env=traced(tmp_path, "broker") if trace else None, name="broker")
    robotd = [sys.executable, "-m", "robotlab.robotd", "--name", "clock", "--broker", endpoint,
              "--prompts-dir", str(tmp_path / "prompts"), "--template", "clock", "--model", model,
              "--api-base", api, "--serve"]
    processes.keep(robotd, lambda proc: is_live(endpoint, "clock", proc),
                   env=traced(tmp_path, "robotd") if trace else None, name="robotd-clock",
                   timeout=ROBOT_READY)


def ps_rows(endpoint: str) -> list[dict[str, Any]]:
    done = cli("ps", "--broker", endpoint, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_one_trace_spans_the_cli_the_broker_the_robotd_and_its_model_and_tool_calls(
        processes: Processes, tmp_path: Path, endpoint: str, script_api: Any) -> None:
    # Given a traced broker and a traced robotd whose robot has a tool
    start_crew(processes, tmp_path, endpoint, script_api(TURNS), "openai/gpt-4o-mini", trace=True)
    # When `robotlab send --wait` asks it to run with its tools
    sent = cli("send", "--broker", endpoint, "--to", "clock", "--type", "robot.run",
               "--json-content", RUN_WITH_TOOLS, "--wait", "--timeout", "120",
               env=traced(tmp_path, "send"), timeout=180)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["reply"] == "It is 12:00 in Oslo."
    # Then every process exported its spans, all of one trace, chained by parent ids
    files = {who: tmp_path / f"{who}.jsonl" for who in ("send", "broker", "robotd")}
    wait_until(lambda: len(spans_in(files["robotd"])) >= 6 and len(spans_in(files["broker"])) >= 2,
               timeout=60, message="the robotd's and the broker's spans")
    spans = [span for path in files.values() for span in spans_in(path)]
    assert {s["context"]["trace_id"] for s in spans} == {
        spans_in(files["send"])[0]["context"]["trace_id"]}
    by_id = {s["context"]["span_id"]: s for s in spans}

    def only(name: str) -> dict[str, Any]:
        (span,) = [s for s in spans if s["name"] == name]
        return span

    def parent(span: dict[str, Any]) -> str:
        return by_id[span["parent_id"]]["name"]

    send, route = only("send clock"), only("route clock")
    process, agent = only("process clock"), only("invoke_agent clock")
    assert send["parent_id"] is None and send["resource"]["attributes"]["service.name"] == "send"
    assert (parent(route), parent(process),
            parent(agent)) == ("send clock", "route clock", "process clock")
    chats = [s for s in spans if s["name"] == "chat openai/gpt-4o-mini"]
    assert [parent(s) for s in [*chats, only("execute_tool clock")]] == ["invoke_agent clock"] * 3
    # ... with the messaging and GenAI attributes
    assert_attributes(send, route, process, agent, chats, only("execute_tool clock"))
    # ... and ps shows what the robot spent, in dollars since the model has a price
    row = wait_until(lambda: [r for r in ps_rows(endpoint) if r.get("tokens_in") == 80], timeout=30,
                     message="the robot's tokens in ps")[0]
    assert (row["tokens_out"], row["stats"]["runs"]) == (16, 1)
    assert row["cost"] == pytest.approx(agent["attributes"]["robotlab.cost.usd"], rel=1e-3)


def assert_attributes(send: dict[str, Any], route: dict[str, Any], process: dict[str, Any],
                      agent: dict[str, Any], chats: list[dict[str, Any]],
                      tool: dict[str, Any]) -> None:
    """The messaging attributes of a message's hops, and the GenAI ones of the robot's work."""
    message_ids = {s["attributes"]["messaging.message.id"] for s in (send, route, process)}
    assert len(message_ids) == 1 and send["attributes"]["messaging.system"] == "robotlab"
    assert route["attributes"]["robotlab.delivery.status"] == "delivered"
    assert sorted((c["attributes"]["gen_ai.usage.input_tokens"],
                   c["attributes"]["gen_ai.usage.output_tokens"])
                  for c in chats) == [(30, 7), (50, 9)]
    assert {c["attributes"]["gen_ai.request.model"] for c in chats} == {"openai/gpt-4o-mini"}
    assert agent["attributes"]["gen_ai.agent.name"] == "clock"
    assert (agent["attributes"]["gen_ai.usage.input_tokens"],
            agent["attributes"]["gen_ai.usage.output_tokens"]) == (80, 16)
    assert agent["attributes"]["robotlab.cost.usd"] > 0
    assert tool["attributes"]["gen_ai.tool.name"] == "clock"


def test_ps_and_top_show_a_robots_load_and_an_unknown_price_while_it_works(
        processes: Processes, tmp_path: Path, endpoint: str, script_api: Any) -> None:
    # Given a robot whose model has no price, busy on a slow model call
    api = script_api([{"content": "late", "delay": 30,
                       "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
                      {"content": "quick", "usage": {"prompt_tokens": 12, "completion_tokens": 3}}])
    start_crew(processes, tmp_path, endpoint, api, "openai/scripted")
    asker = processes.start([sys.executable, "-m", "robotlab.cli", "send", "--broker", endpoint,
                             "--to", "clock", "--wait", "--timeout", "60", "hello"], name="send")
    # Then ps shows the delivery in flight, its age, and the robot at work
    busy = wait_until(lambda: [r for r in ps_rows(endpoint) if r["in_flight"] == 1
                               and (r["oldest"] or 0) > 0.5
                               and r.get("status") == "running"], timeout=30,
                      message="the busy robot in ps")[0]
    assert busy["cost"] == "unknown"  # no price: never a made-up 0
    table = cli("ps", "--broker", endpoint)
    assert table.returncode == 0, table.stderr
    header, line = table.stdout.splitlines()[:2]
    assert header.split()[:8] == ["NAME", "INSTANCE", "STATE", "IN", "FLIGHT", "OLDEST", "TOKENS",
                                  "COST"]
    assert line.split()[0] == "clock" and "unknown" in line and "running" in line
    # And top, off a terminal, prints the same table each interval until Ctrl-C, then exits 0
    top = subprocess.Popen([sys.executable, "-m", "robotlab.cli", "top", "--broker", endpoint,
                            "--interval", "0.2"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONFAULTHANDLER": "1"})
    try:
        seen: list[str] = []
        wait_until(lambda: _read_until(top, seen, "Ctrl-C to quit", 2), timeout=30,
                   message="two frames of top")
    finally:
        top.send_signal(signal.SIGINT)
        try:
            out, err = top.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            # stuck: its threads' stacks (faulthandler, on SIGABRT) say where
            top.send_signal(signal.SIGABRT)
            out, err = top.communicate(timeout=15)
            raise AssertionError(f"top did not exit on Ctrl-C:\n{err[-6000:]}") from None
    assert top.returncode == 0, err
    frame = "".join(seen)
    assert "1 member" in frame and "clock" in frame and "unknown" in frame and "IN FLIGHT" in frame
    asker.popen.kill()


def _read_until(proc: subprocess.Popen[str], seen: list[str], marker: str, count: int) -> bool:
    assert proc.stdout is not None
    seen.append(proc.stdout.readline())
    return sum(marker in line for line in seen) >= count


def test_top_once_prints_one_frame_and_says_when_no_robot_is_on_the_bus(
        start_broker, endpoint: str) -> None:
    start_broker(endpoint)
    done = cli("top", "--broker", endpoint, "--once")
    assert done.returncode == 0, done.stderr
    assert "0 members" in done.stdout and "no robots on the bus" in done.stdout
    assert done.stdout.count("Ctrl-C to quit") == 1


def test_top_once_exits_with_the_errors_code_in_one_line(processes: Processes,
                                                         tmp_path: Path) -> None:
    # Given a keyed broker, and a key that may join under any name but may not ask for ps
    keys = tmp_path / "keys"
    for argv in (["broker"], ["watcher", "--robot", "*"]):
        assert cli("keys", "new", *argv, "--dir", str(keys)).returncode == 0
    url = free_tcp_url()
    processes.keep(broker_argv(url, "--keys", str(keys)),
                   lambda proc: "listening on" in proc.output(), name="broker")
    # When top --once asks with it
    done = cli("top", "--broker", url, "--once", "--keys", str(keys), "--key",
               str(keys / "watcher.key_secret"))
    # Then the refusal is one line on stderr and the exit code is the error's (69), not 0
    assert done.returncode == 69, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert "forbidden" in done.stderr and "admin" in done.stderr, done.stderr
    assert "Ctrl-C to quit" not in done.stdout


SPAWNING_PARENT = """
import sys
from robotlab import Robot
from robotlab.observability import setup, trace_settings, tracing

setup(trace_settings(), "boss")
boss = Robot(name="boss", bus=sys.argv[1], model="openai/gpt-4o-mini", api_base=sys.argv[2])
kid = boss.spawn(name="kid", system_prompt="You help.")
print(kid.run("hello").reply, flush=True)
kid.stop()
tracing.flush()
boss.leave_bus()
"""


def test_a_robot_spawned_through_the_fork_server_traces_its_run_in_its_parents_trace(
        processes: Processes, tmp_path: Path, endpoint: str, script_api: Any) -> None:
    # Given a traced broker, and a traced script whose robot spawns a child through the fork server
    processes.keep(broker_argv(endpoint), lambda proc: ping(endpoint),
                   env=traced(tmp_path, "broker"), name="broker")
    env = {key: value for key, value in traced(tmp_path, "crew").items()
           if key != "OTEL_SERVICE_NAME"}
    script = tmp_path / "parent.py"
    script.write_text(SPAWNING_PARENT)
    # When the parent runs its child once (the fork server and the child inherit its environment)
    done = subprocess.run([sys.executable, str(script), endpoint,
                           script_api([{"content": "hi from kid"}])],
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "hi from kid"
    # Then the child, forked from the warm server, set up its own tracer and exported its spans
    crew, broker = tmp_path / "crew.jsonl", tmp_path / "broker.jsonl"
    wait_until(lambda: any(s["name"] == "chat openai/gpt-4o-mini" for s in spans_in(crew)),
               timeout=60, message="the spawned child's spans")
    spans = spans_in(crew) + spans_in(broker)
    by_id = {s["context"]["span_id"]: s for s in spans}

    def only(name: str) -> dict[str, Any]:
        (span,) = [s for s in spans if s["name"] == name]
        return span

    send, process = only("send kid"), only("process kid")
    agent, chat = only("invoke_agent kid"), only("chat openai/gpt-4o-mini")
    assert send["resource"]["attributes"]["service.name"] == "boss"
    assert {s["resource"]["attributes"]["service.name"]
            for s in (process, agent, chat)} == {"robotd-kid"}
    # ... all in the parent's trace:
    # send (parent) -> route (broker) -> process -> invoke_agent -> chat (child)
    assert len({s["context"]["trace_id"] for s in (send, process, agent, chat)}) == 1
    route = by_id[process["parent_id"]]
    assert (route["name"], route["parent_id"]) == ("route kid", send["context"]["span_id"])
    assert (agent["parent_id"], chat["parent_id"]) == (process["context"]["span_id"],
                                                       agent["context"]["span_id"])


def test_an_unreachable_collector_leaves_send_its_output_and_its_exit(
        start_robotd, broker: str) -> None:
    # Given a collector address where nothing listens, and a robot that answers
    start_robotd("echo")
    with socket.socket() as probe:  # a port the kernel just handed out, bound by nobody now
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    # When `send --wait` runs traced: its spans can go nowhere
    done = cli("send", "--broker", broker, "--to", "echo", "--wait", "hi",
               env={"OTEL_EXPORTER_OTLP_ENDPOINT": closed, "OTEL_TRACES_EXPORTER": "otlp"})
    # Then it exits 0 with the reply alone on stdout, and says on stderr that the spans were dropped
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hi (from ") and done.stdout.count("\n") == 1, done.stdout
    assert "not exported within 0.08s" in done.stderr


def test_the_console_exporter_writes_spans_to_stderr_never_into_the_output(
        start_robotd, broker: str) -> None:
    start_robotd("echo")
    done = cli("send", "--broker", broker, "--to", "echo", "--wait", "hi",
               env={"OTEL_TRACES_EXPORTER": "console"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("hi (from ") and done.stdout.count("\n") == 1, done.stdout
    assert '"name": "send echo"' in done.stderr
