"""A served robotd on a real model: `robotlab send --wait`, and a sender's time-out that bounds the
work."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.model.conftest import END_OF_TEXT, ModelServer, running_server, wait_idle
from tests.process.conftest import Proc, Processes, is_live, live
from tests.waiting import wait_until

ROBOT_READY = 90
SMALL_CONTEXT = 512


def serve_bob(processes: Processes, broker: str, server: ModelServer, *extra: str) -> Proc:
    prompt = [] if "--template" in extra else ["--system-prompt", "You are a helpful assistant."]
    argv = [sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker", broker, "--serve",
            *prompt, "--model", server.model, "--api-base", server.url, *extra]
    return processes.keep(argv, lambda proc: is_live(broker, "bob", proc), name="robotd-bob",
                          timeout=ROBOT_READY)


def send(broker: str, *argv: str,
         timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "robotlab.cli", "send", "--broker", broker, "--to",
                           "bob", *argv],
                          capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


def background_send(broker: str, timeout: str, text: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "robotlab.cli", "send", "--broker", broker,
                             "--to", "bob", "--wait", "--timeout", timeout, "--", text],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def dead_letters(broker: str) -> str:
    return subprocess.run([sys.executable, "-m", "robotlab.cli", "dlq", "list", "--broker", broker],
                          capture_output=True, text=True, timeout=30).stdout


def test_a_served_robot_answers_send_wait(processes: Processes, broker: str,
                                          model_server: ModelServer) -> None:
    serve_bob(processes, broker, model_server, "--max-tokens", "32")
    done, _ = send(broker, "--wait", "--timeout", "120", "Reply with one word: hello.")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


def test_a_served_robot_keeps_answering_once_its_conversation_outgrows_the_window(
        processes: Processes, broker: str, tmp_path: Path) -> None:
    # Given bob served on a model whose window is 512 tokens, and tasks of about 150 tokens: his
    # conversation (he keeps every task) overflows the window by the fourth
    with running_server(tmp_path, SMALL_CONTEXT) as small:
        bob = serve_bob(processes, broker, small, "--max-tokens", "8")
        note = " ".join(f"Item {number} is fine." for number in range(25))
        # When he is sent six of them, one after the other
        for task in range(6):
            done, _ = send(broker, "--wait", "--timeout", "120", "--",
                           f"Task {task}. Read this note, then reply with one word. {note}")
            # Then every one is answered: the oldest of his conversation goes when it overflows
            assert done.returncode == 0, (task, done.stderr)
    assert bob.output().count("messages are dropped and the task runs again") >= 1


def test_a_served_robot_never_answers_with_a_reply_the_window_cut_short(
        processes: Processes, broker: str, tmp_path: Path) -> None:
    # Given bob served on a 512-token window with room for 300-token replies, asked for lists of
    # about 100 tokens: within a few tasks his conversation leaves a reply less room than it needs
    # (llama.cpp's server then answers, and stops when the window is full) or none at all
    with running_server(tmp_path, SMALL_CONTEXT) as small:
        bob = serve_bob(processes, broker, small, "--max-tokens", "300")
        # When he is sent six of them, one after the other
        for task in range(6):
            done, _ = send(broker, "--wait", "--timeout", "120", "--", f"Task {task}: list the "
                           "whole numbers from 1 to 40, separated by commas.")
            assert done.returncode == 0, (task, done.stderr)
    # Then no reply the window cut short was sent back: each time a reply was cut, the oldest
    # turns went and the task ran again (a reply returned cut would be logged as "a reply was cut")
    log = bob.output()
    assert "a reply was cut" not in log, log
    assert log.count("messages are dropped and the task runs again") >= 1


def test_the_senders_time_out_bounds_the_robots_work(processes: Processes, start_broker: Any,
                                                     endpoint: str, model_server: ModelServer,
                                                     tmp_path: Path) -> None:
    # The broker's own ack time-out (30 s), not the process tests' 3 s: a message queued behind
    # a long one is then still bob's to refuse when its sender's deadline passes.
    start_broker(endpoint)
    broker = endpoint
    # 4,096 tokens with the model's end-of-text banned (the template's logit_bias): the reply
    # cannot end before its cap, tens of seconds even on a fast machine. The sender waits 8 s.
    template = tmp_path / "long_winded.md"
    template.write_text("---\nmax_tokens: 4096\nlogit_bias: " + json.dumps(END_OF_TEXT) + "\n---\n"
                        "You are a helpful assistant.\n")
    serve_bob(processes, broker, model_server, "--template", str(template))
    started = time.monotonic()
    story = background_send(broker, "8", "Write a 300-word story about a lighthouse.")
    wait_until(lambda: live(broker, "bob")[0]["in_flight"] >= 1, timeout=10,
               message="bob working on the story")
    behind = background_send(broker, "3", "Queued behind the story.")
    assert story.wait(60) == 75, story.communicate()
    took = time.monotonic() - started
    assert behind.wait(30) == 75
    assert took < 8 + 5, f"send --timeout 8 returned after {took:.1f}s"
    # The message whose sender gave up while it waited in bob's queue was never started.
    wait_until(lambda: "not run" in dead_letters(broker), timeout=30,
               message="the queued message's dead letter")
    # bob stopped its model call at the deadline (the stream closed, so the server stopped too):
    # the server is free again at once, not minutes later, and bob is live with nothing in hand.
    assert wait_idle(model_server) < 20
    wait_until(lambda: live(broker, "bob")[0]["in_flight"] == 0, timeout=20,
               message="bob idle again")
