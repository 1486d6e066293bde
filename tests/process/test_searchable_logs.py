"""Logs an operator can search: every stderr line of a JSON-logging robotd is one object naming the
robot and the message in hand, a waiting robotd says why it waits, and a broker says whom it
refused. Real processes throughout; the model is the script server."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from robotlab import bus
from robotlab.cli.robotlab_cli import main
from robotlab.testing import serve_script
from tests.process.conftest import (
    ROBOT_READY,
    Proc,
    Processes,
    broker_argv,
    free_tcp_url,
    is_live,
    ping,
    stop,
)
from tests.process.test_curve_processes import keys_dir, robotd_argv  # noqa: F401
from tests.waiting import wait_until

pytestmark = pytest.mark.process


def entries(text: str) -> list[dict[str, Any]]:
    """Each line of ``text`` as JSON (a line that is not fails the test, naming it)."""
    parsed = []
    for line in text.splitlines():
        try:
            parsed.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"a stderr line that is not JSON: {line!r}\nall of stderr:\n{text}")
    return parsed


def test_a_json_robotd_writes_only_json_lines_naming_the_robot_and_the_message(
        processes: Processes, tmp_path: Path, endpoint: str) -> None:
    # Given a broker, and a served robot logging JSON at DEBUG, so that litellm has lines to write
    # (its stderr alone, in a file of its own), and tracing to a file
    processes.keep(broker_argv(endpoint), lambda proc: ping(endpoint), name="broker")
    stderr, spans = tmp_path / "robotd.stderr", tmp_path / "spans.jsonl"
    traced = {**os.environ, "OTEL_TRACES_EXPORTER": "jsonl", "ROBOT_LAB_TRACES_FILE": str(spans)}
    with serve_script([{"content": "hello back"}]) as api:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", "sage", "--broker", endpoint,
                "--system-prompt", "You help.", "--model", "openai/gpt-4o-mini", "--api-base", api,
                "--serve", "--log-format", "json", "--log-level", "DEBUG"]
        with open(stderr, "wb") as err:
            robotd = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, env=traced)
        try:
            wait_until(lambda: is_live(endpoint, "sage", robotd) or robotd.poll() is not None,
                       timeout=ROBOT_READY, message="sage on the bus")
            # When a message is sent to it and answered
            sent = subprocess.run([sys.executable, "-m", "robotlab.cli", "send", "--broker",
                                   endpoint, "--to", "sage", "--wait", "--timeout", "60",
                                   "hi"], capture_output=True, text=True, timeout=120)
            assert sent.returncode == 0 and sent.stdout.strip() == "hello back", sent.stderr
            wait_until(lambda: "done with message" in stderr.read_text(), timeout=10,
                       message="the done line")
        finally:
            robotd.terminate()
            out, _ = robotd.communicate(timeout=30)
    # Then every line it wrote to stderr is one JSON object, the ready line and litellm's included
    # (litellm's own handler, were it left in place, would write each of its lines a second
    # time, as plain text and, below WARNING, to stdout)
    logged = entries(stderr.read_text())
    assert out == b"", out.decode()
    assert all({"time", "level", "logger", "pid", "message"} <= set(e) for e in logged)
    assert any(e["logger"] == "robotlab.robotd" and "robotd sage ready" in e["message"]
               for e in logged)
    assert any(e["logger"].startswith("LiteLLM") for e in logged), ("litellm logs at DEBUG: its "
                                                                    "lines are JSON too")
    # ... and the line about the message names the robot, its instance and the message's id
    (taken,) = [e for e in logged if "robotd sage: message" in e["message"]]
    assert taken["robot"] == "sage" and taken["instance"]
    assert taken["message_id"] in taken["message"]
    # ... and the trace its handling belongs to: the one of the robotd's "process sage" span
    (process,) = [span for span in map(json.loads, spans.read_text().splitlines())
                  if span["name"] == "process sage"]
    assert process["context"]["trace_id"] == f"0x{taken['trace_id']}"


def retry_lines(proc: Proc) -> list[str]:
    return [line for line in proc.output().splitlines() if "trying again in" in line]


def test_retry_lines_name_what_the_socket_saw_not_the_keys(
        processes: Processes, keys_dir: Path) -> None:  # noqa: F811
    # Given bob, with an authorized key, started before any broker: nothing listens yet
    url = free_tcp_url()
    bob = processes.start(robotd_argv(url, "bob", "--keys", str(keys_dir)), name="robotd-bob")
    wait_until(lambda: retry_lines(bob), timeout=20, message="a retry line")
    assert "could not connect (nothing listening there, or no route to it)" in retry_lines(bob)[0]
    # When the broker comes up, bob joins; then the broker stops answering (stopped, not gone)
    broker = processes.start(broker_argv(url, "--keys", str(keys_dir)), name="broker")
    wait_until(lambda: "robotd bob ready" in bob.output(), timeout=40, message="bob joined")
    seen = len(retry_lines(bob))
    broker.popen.send_signal(signal.SIGSTOP)
    try:
        # Then bob's retry lines say the broker is there but does not answer
        wait_until(lambda: len(retry_lines(bob)) > seen, timeout=30,
                   message="a retry line while the broker is stopped")
        assert "connected, but no answer" in retry_lines(bob)[-1], bob.output()
    finally:
        broker.popen.kill()
        broker.popen.send_signal(signal.SIGCONT)
    # And, the broker gone, that nothing listens; never once asking about keys
    seen = len(retry_lines(bob))
    wait_until(lambda: len(retry_lines(bob)) > seen, timeout=40,
               message="a retry line once the broker is gone")
    assert "could not connect" in retry_lines(bob)[-1]
    assert not any("authorized" in line for line in retry_lines(bob)), bob.output()


def start_keyed_broker(processes: Processes, keys_dir: Path) -> tuple[Proc, str]:  # noqa: F811
    """A broker with ``--keys`` on a fresh tcp port, once it listens; and its URL."""
    url = free_tcp_url()
    broker = processes.start(broker_argv(url, "--keys", str(keys_dir)), name="broker")
    wait_until(lambda: "listening on" in broker.output(), timeout=15,
               message="keyed broker listens")
    return broker, url


def test_refused_keys_are_named_on_both_sides(
        processes: Processes, keys_dir: Path, tmp_path: Path) -> None:  # noqa: F811
    broker, url = start_keyed_broker(processes, keys_dir)
    # Given eve, whose key the broker never authorized, and a robotd with no key at all
    stranger = tmp_path / "stranger"
    assert CliRunner().invoke(main, ["keys", "new", "eve", "--dir", str(stranger), "--robot",
                                     "eve"]).exit_code == 0
    (stranger / "broker.key").write_bytes((keys_dir / "broker.key").read_bytes())
    eve = processes.start(robotd_argv(url, "eve", "--keys", str(stranger)), name="robotd-eve")
    keyless = processes.start(robotd_argv(url, "keyless"), name="robotd-keyless")
    # Then each one's retry line names its refusal, and the broker logs both at INFO
    wait_until(lambda: retry_lines(eve) and retry_lines(keyless), timeout=30, message="both retry")
    assert "the broker refused this client's CURVE key" in retry_lines(eve)[0]
    assert "this broker requires CURVE keys and this client has none" in retry_lines(keyless)[0]
    wait_until(lambda: re.search(r"INFO refused a connection from 127\.0\.0\.1: its CURVE key is "
                                 r"not in \S+authorized",
                                 broker.output()), timeout=10, message="eve's refusal logged")
    # which side sees the mismatch first is a race (security.KeylessWatcher): either line names it
    wait_until(lambda: re.search(r"INFO refused a connection on tcp://127\.0\.0\.1:\d+: it "
                                 r"(offered no CURVE key|broke off during the CURVE handshake "
                                 r"\(a client started without --keys)",
                                 broker.output()), timeout=10, message="the keyless refusal logged")


def test_a_handshake_broken_off_is_logged_once_in_a_while(
        processes: Processes, keys_dir: Path) -> None:  # noqa: F811
    broker, url = start_keyed_broker(processes, keys_dir)
    # Given clients that go away after the first ten bytes of a ZeroMQ greeting, three times:
    # what the broker sees of a keyless client that read the broker's greeting first
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    for _ in range(3):
        with socket.create_connection((host, int(port)), timeout=5) as probe:
            probe.sendall(b"\xff" + bytes(8) + b"\x7f")
            probe.recv(10)
    # Then the broker logs one line naming the likely causes, not one per connection
    wait_until(lambda: "broke off during the CURVE handshake" in broker.output(), timeout=10,
               message="the broken-off handshake logged")
    stop(broker)
    assert broker.output().count("broke off during the CURVE handshake") == 1, broker.output()


def test_a_json_robotd_refused_for_good_ends_on_a_json_line_too(
        processes: Processes, keys_dir: Path) -> None:  # noqa: F811
    broker, url = start_keyed_broker(processes, keys_dir)
    # Given bob's key asking for alice's name, logging JSON: refused, exit 78
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "alice", "--broker", url,
            "--handler", "json:dumps", "--keys", str(keys_dir), "--key",
            str(keys_dir / "bob.key_secret"), "--log-format", "json"]
    alice = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert alice.returncode == 78, alice.stderr
    # Then the line it ends on, which says why, is a JSON object like the others
    last = entries(alice.stderr)[-1]
    assert last["level"] == "ERROR", alice.stderr
    assert "refused 'alice' (forbidden)" in last["message"], alice.stderr


def test_a_robot_spawned_by_a_json_robotd_logs_json_lines_naming_itself(
        processes: Processes, broker: str, start_robotd) -> None:
    # Given a robotd logging JSON whose handler spawns a robot through the fork server (the
    # child and the fork server write to the robotd's stderr, which they inherit)
    spawner = start_robotd("spawner", "handlers:spawn_child", "--log-format", "json")
    with serve_script([{"content": "hello from kid"}]) as api:
        # When it spawns kid, and kid is asked something
        with bus.connect(broker, name="tester") as client:
            asked = {"broker": broker, "parent": "boss", "child": "kid", "api_base": api}
            spawned = client.request("spawner", asked, timeout=120).content
        sent = subprocess.run([sys.executable, "-m", "robotlab.cli", "send", "--broker", broker,
                               "--to", "kid", "--wait", "--timeout", "60",
                               "hi"], capture_output=True, text=True, timeout=120)
        assert sent.returncode == 0 and sent.stdout.strip() == "hello from kid", sent.stderr
        wait_until(lambda: "robotd kid: done with message" in spawner.output(), timeout=10,
                   message="kid's done line")
    # Then every line there is one JSON object, kid's included, each naming kid and its instance
    logged = entries(spawner.output())
    kids = [e for e in logged if e["pid"] == spawned["pid"]]
    assert kids and all((e["robot"], e["instance"]) == ("kid", spawned["instance"])
                        for e in kids), kids
    assert any("robotd kid: message" in e["message"] and e["message_id"] in e["message"]
               for e in kids), kids
