"""``robotlab web`` as a real process over a real broker and real robotds, read over HTTP as a
browser would: the event stream (server-sent events), the view as JSON, the replay request."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import httpx
import pytest

from robotlab import bus
from robotlab.errors import DeliveryFailed
from robotlab.testing import serve_script
from tests.process.conftest import ROBOT_READY, Processes, is_live, stop
from tests.waiting import wait_until

pytestmark = pytest.mark.process

SECONDS = 60  # how long a step may take on two shared cores


def web_argv(broker: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "robotlab.cli", "web", "--broker", broker, "--interval", "0.2",
            *extra]


@pytest.fixture
def web(processes: Processes, broker: str) -> Callable[..., tuple[str, Any]]:
    """Start ``robotlab web --bind 127.0.0.1:0``; return its page's URL (from its log) and its
    process."""

    def start(*extra: str) -> tuple[str, Any]:
        proc = processes.keep(web_argv(broker, "--bind", "127.0.0.1:0", *extra),
                              lambda proc: "serving the web console at" in proc.output(),
                              name="web")
        found = re.search(r"serving the web console at (http://\S+)", proc.output())
        assert found, proc.output()
        return found.group(1), proc

    return start


def events(url: str, stack: ExitStack) -> Iterator[tuple[str, Any]]:
    """The page's event stream as (event, data) pairs, read as they come."""
    response = stack.enter_context(httpx.stream("GET", url + "events", timeout=SECONDS))
    assert response.headers["content-type"].startswith("text/event-stream")
    name = ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: "):]
        elif line.startswith("data: ") and name:
            yield name, json.loads(line[len("data: "):])
            name = ""


def next_members(stream: Iterator[tuple[str, Any]],
                 wanted: Callable[[list[dict]], bool]) -> list[dict]:
    """The first ``members`` event that ``wanted`` accepts (the stream's read time-out bounds the
    wait)."""
    for name, data in stream:
        if name == "members" and wanted(data):
            return data
    raise AssertionError("the stream ended")


def robots(members: list[dict]) -> list[str]:
    return sorted(row["name"] for row in members if row["role"] == "robot")


def view(url: str) -> dict[str, Any]:
    return httpx.get(url + "api/view", timeout=SECONDS).json()


def dead_letter(broker: str, to: str, content: str) -> None:
    """Send ``content`` to ``to`` and let it fail (no robot of that name: it is dead-lettered)."""
    with bus.connect(broker, name="test-send", timeout=5) as client, pytest.raises(DeliveryFailed):
        client.send(to, content).wait(SECONDS)


def test_the_stream_shows_the_crew_and_a_robotd_joining_and_leaving(web, start_robotd,
                                                                    broker: str) -> None:
    start_robotd("echo")
    url, server = web()
    page = httpx.get(url, timeout=SECONDS)
    assert page.status_code == 200 and "new EventSource(" in page.text
    with ExitStack() as stack:
        stream = events(url, stack)
        first = next_members(stream, lambda rows: True)
        assert robots(first) == ["echo"]
        assert {row["name"] for row in first if row["role"] == "client"} >= {"robotlab-web"}
        late = start_robotd("late")
        joined = next_members(stream, lambda rows: "late" in robots(rows))
        [row] = [row for row in joined if row["name"] == "late"]
        assert (row["pid"], row["state"], row["in_flight"]) == (late.pid, "ready", 0)
        stop(late)
        next_members(stream, lambda rows: robots(rows) == ["echo"])
        # A SIGTERM with a browser still listening: its stream ends whole, and the server exits 0.
        assert stop(server) == 0, server.output()
        for _ in stream:  # httpx raises here on a response cut short
            pass
    assert "Traceback" not in server.output() and "ERROR" not in server.output()


def test_a_sigterm_as_soon_as_it_says_where_it_serves_ends_it_cleanly(web) -> None:
    # The line comes once SIGTERM is in the console's hands, not before (then it killed it).
    _, server = web()
    assert stop(server) == 0, server.output()


def test_a_model_robots_tokens_and_dollars_are_in_the_view(web, processes: Processes,
                                                           broker: str) -> None:
    with serve_script([{"content": "pong"}]) as api:
        argv = [sys.executable, "-m", "robotlab.robotd", "--name", "bob", "--broker", broker,
                "--system-prompt", "You answer briefly.", "--model", "openai/scripted",
                "--api-base", api, "--serve"]
        processes.keep(argv, lambda proc: is_live(broker, "bob", proc), name="robotd-bob",
                       timeout=ROBOT_READY)
        url, _ = web()
        with bus.connect(broker, name="test-ask", timeout=5) as client:
            assert client.send_request("bob", "ping").reply(SECONDS).content == "pong"
        stats = wait_until(lambda: [row["stats"] for row in view(url)["members"]
                                    if row["name"] == "bob" and row["stats"].get("tokens_in")],
                           timeout=SECONDS, message="bob's tokens in the view")
    assert stats[0]["tokens_out"] > 0 and "cost" in stats[0]


def test_the_messages_flowing_are_in_the_view_and_in_robotlab_traffic(web, start_robotd,
                                                                     broker: str) -> None:
    start_robotd("echo")
    url, _ = web()
    with bus.connect(broker, name="test-ask", timeout=5) as client:
        client.send_request("echo", "a private question").reply(SECONDS)
    flow = wait_until(lambda: (flow := view(url)["messages"])["messages"] and flow,
                      timeout=SECONDS, message="the messages in the view")
    rows = [(m["from"], m["to"], m["type"]) for m in flow["messages"]]
    assert rows == [("echo", "test-ask", "reply"), ("test-ask", "echo", "request")]  # newest first
    assert flow["routed"] == 2 and "private" not in json.dumps(flow)
    done = subprocess.run([sys.executable, "-m", "robotlab.cli", "traffic", "--broker", broker],
                          capture_output=True, text=True, timeout=SECONDS)
    assert done.returncode == 0, done.stderr
    assert re.search(r"test-ask\s+echo\s+request", done.stdout), done.stdout
    assert re.search(r"echo\s+test-ask\s+reply\s", done.stdout), done.stdout


def test_a_dead_letter_is_listed_and_replayed_once_its_robot_exists(web, start_robotd,
                                                                    broker: str) -> None:
    url, _ = web()
    dead_letter(broker, "late", "early")
    [letter] = wait_until(lambda: view(url)["dlq"], timeout=SECONDS,
                          message="the dead letter in the view")
    assert (letter["reason"], letter["to"], letter["content"], letter["maybe_ran"]) == (
        "undeliverable", "late", "early", False)
    late = start_robotd("late")
    replayed = httpx.post(f"{url}api/dlq/{letter['dlq_id']}/replay", timeout=SECONDS)
    assert replayed.status_code == 200, replayed.text
    assert replayed.json()["ok"] and replayed.json()["delivered_to"][0] in {
        row["instance"] for row in view(url)["members"] if row["pid"] == late.pid}
    assert view(url)["dlq"] == []
    unknown = httpx.post(f"{url}api/dlq/dl-999/replay", timeout=SECONDS)
    assert unknown.status_code == 409 and "no dead letter 'dl-999'" in unknown.json()["error"]


def test_a_letter_whose_work_may_have_run_is_replayed_only_when_forced(web, start_robotd,
                                                                      broker: str) -> None:
    url, _ = web()
    sloth = start_robotd("sloth", "handlers:hang")
    with bus.connect(broker, name="test-send", timeout=5) as client:
        client.send("sloth", "charge the card")  # delivered, never acked
        wait_until(lambda: any(row["in_flight"] for row in view(url)["members"]
                               if row["name"] == "sloth"),
                   timeout=SECONDS, message="sloth holding the message")
    sloth.popen.kill()  # kill -9 mid-work: whether the card was charged, nobody knows
    [letter] = wait_until(lambda: view(url)["dlq"], timeout=SECONDS,
                          message="the silent robot's message dead-lettered")
    assert (letter["reason"], letter["maybe_ran"]) == ("timeout", True)
    start_robotd("sloth", "handlers:echo")
    refused = httpx.post(f"{url}api/dlq/{letter['dlq_id']}/replay", timeout=SECONDS)
    assert refused.status_code == 409 and "may have run already" in refused.json()["error"]
    forced = httpx.post(f"{url}api/dlq/{letter['dlq_id']}/replay?force=1", timeout=SECONDS)
    assert forced.status_code == 200 and forced.json()["ok"], forced.text


@pytest.mark.parametrize(("argv", "code", "line"), [
    (["--bind", "0.0.0.0:0"], 78,
     "refusing to serve the web console on 0.0.0.0:0: it is reachable beyond this machine"),
    (["--bind", "8765"], 64, "'8765' is not HOST:PORT"),
    (["--interval", "0"], 64, "--interval"),
])
def test_an_unsafe_or_bad_argument_is_refused_with_one_line(broker: str, argv: list[str], code: int,
                                                            line: str) -> None:
    done = subprocess.run(web_argv(broker, *argv), capture_output=True, text=True, timeout=SECONDS)
    assert done.returncode == code, done.stderr
    assert line in done.stderr and "Traceback" not in done.stderr
