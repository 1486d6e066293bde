"""``robotlab a2a-serve`` as a real process, called with the ``a2a-sdk``'s own client.

A real broker and real robotds: ``bob`` serves a model robot whose model is the script server
(``robotlab.testing``), ``echo`` and ``sloth`` host handlers from ``handlers/`` (``sloth`` never
answers). The server runs on pytest-xprocess like every long-lived process here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.client import AgentCardResolutionError, ClientConfig, create_client
from a2a.helpers import get_artifact_text, get_message_text
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)

from tests.process.conftest import Processes, stop
from tests.process.test_mcp_serve_processes import served_bob  # noqa: F401 - the same bob, a fixture

pytestmark = pytest.mark.process

SECONDS = 60  # how long a step may take on two shared cores


def a2a_serve_argv(broker: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "robotlab.cli", "a2a-serve", "--broker", broker, *extra]


@pytest.fixture
def a2a_http(processes: Processes, broker: str) -> Callable[..., tuple[str, Any]]:
    """Start ``a2a-serve --http 127.0.0.1:0``; return its ``/robots`` URL (from its log) and its
    process."""

    def start(*extra: str) -> tuple[str, Any]:
        proc = processes.keep(a2a_serve_argv(broker, "--http", "127.0.0.1:0", *extra),
                              lambda proc: "serving A2A agents at" in proc.output(),
                              name="a2a-serve")
        found = re.search(r"serving A2A agents at (http://\S+)", proc.output())
        assert found, proc.output()
        return found.group(1), proc

    return start


def config(streaming: bool, http: httpx.AsyncClient) -> ClientConfig:
    """The SDK client's config with an HTTP client that waits as long as a step may take: the
    SDK's own waits httpx's default 5 s, less than a robot's model call (a first one imports
    litellm, seconds on two shared cores)."""
    return ClientConfig(streaming=streaming, httpx_client=http)


def request(text: str) -> SendMessageRequest:
    return SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=f"m-{text}",
                                              parts=[Part(text=text)]))


async def events(url: str, text: str, streaming: bool) -> list[StreamResponse]:
    """Every response of one ``message/send`` (or ``message/stream``) to the agent at ``url``."""
    async with httpx.AsyncClient(timeout=SECONDS) as http:
        client = await create_client(url, config(streaming, http))
        async with client:
            with anyio.fail_after(SECONDS):
                return [response async for response in client.send_message(request(text))]


@pytest.mark.usefixtures("served_bob")
def test_a_live_robot_is_an_agent_whose_reply_completes_the_task(start_robotd, a2a_http) -> None:
    start_robotd("echo", "handlers:echo")
    robots, server = a2a_http()

    async def scenario() -> None:
        async with httpx.AsyncClient() as http:
            listed = (await http.get(robots)).json()
        assert [robot["name"] for robot in listed["robots"]] == ["bob", "echo"]
        bob = f"{robots}/bob/"
        async with httpx.AsyncClient(timeout=SECONDS) as http:
            client = await create_client(bob, config(False, http))
            async with client:
                card = client._card  # noqa: SLF001 - what create_client resolved from the well-known path
        assert (card.name, card.capabilities.streaming,
                [s.id for s in card.skills]) == ("bob", True, ["ask"])
        assert card.supported_interfaces[0].url == bob

        [sent] = await events(bob, "ping", streaming=False)
        assert sent.task.status.state == TaskState.TASK_STATE_COMPLETED
        assert [get_artifact_text(a) for a in sent.task.artifacts] == ["pong"]

        streamed = await events(f"{robots}/echo/", "hi", streaming=True)
        kinds = [response.WhichOneof("payload") for response in streamed]
        assert kinds[0] == "task" and kinds[-1] == "status_update", kinds
        states = [r.status_update.status.state for r in streamed if r.HasField("status_update")]
        assert states == [TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_COMPLETED]
        [artifact] = [r.artifact_update.artifact for r in streamed if r.HasField("artifact_update")]
        assert get_artifact_text(artifact).startswith("hi (from ")

    anyio.run(scenario)
    assert stop(server) == 0, server.output()
    assert "Traceback" not in server.output()


def test_a_robot_that_does_not_answer_fails_the_task_or_is_canceled(start_robotd, a2a_http) -> None:
    start_robotd("sloth", "handlers:hang")
    robots, server = a2a_http("--timeout", "2")
    sloth = f"{robots}/sloth/"

    async def scenario() -> None:
        [failed] = await events(sloth, "anything", streaming=False)
        assert failed.task.status.state == TaskState.TASK_STATE_FAILED
        reason = get_message_text(failed.task.status.message)
        assert reason.startswith("sloth: no reply from sloth within 2s"), reason
        assert "\n" not in reason, reason

        http = httpx.AsyncClient(timeout=SECONDS)
        client = await create_client(sloth, config(True, http))
        async with client:  # it opens and closes the HTTP client it was given
            with anyio.fail_after(SECONDS):
                async for response in client.send_message(request("wait for me")):
                    if response.HasField("status_update"):
                        assert response.status_update.status.state == TaskState.TASK_STATE_WORKING
                        task_id = response.status_update.task_id
                        break
                canceled = await client.cancel_task(CancelTaskRequest(id=task_id))
                assert canceled.status.state == TaskState.TASK_STATE_CANCELED
                again: Task = await client.get_task(GetTaskRequest(id=task_id))
                assert again.status.state == TaskState.TASK_STATE_CANCELED

    anyio.run(scenario)
    assert stop(server) == 0, server.output()
    assert "Traceback" not in server.output()


def test_an_unknown_robot_is_a_clear_404_and_a_foreign_host_is_refused(
        start_robotd, a2a_http) -> None:
    start_robotd("echo", "handlers:echo")
    robots, _ = a2a_http()

    async def scenario() -> None:
        with pytest.raises(AgentCardResolutionError) as raised:
            await create_client(f"{robots}/nobody/")
        assert "404" in str(raised.value)
        async with httpx.AsyncClient() as http:
            answer = await http.post(f"{robots}/nobody/",
                                     json={"jsonrpc": "2.0", "id": 1, "method": "SendMessage"})
            rebound = await http.get(f"{robots}/echo/.well-known/agent-card.json",
                                     headers={"Host": "evil.example"})
            from_page = await http.get(robots, headers={"Origin": "http://evil.example"})
        assert answer.status_code == 404
        assert answer.json() == {
            "error": "no live robot named 'nobody' on the bus: GET /robots lists the agents"}
        assert (rebound.status_code, from_page.status_code) == (403, 403)
        assert rebound.json()["error"].startswith(
            "Host 'evil.example' is not loopback: this server answers only")
        assert from_page.json()["error"].startswith("Origin 'http://evil.example' is not loopback")

    anyio.run(scenario)


@pytest.mark.parametrize(("argv", "code", "line"), [
    (["--http", "0.0.0.0:0"], 78,
     "refusing to serve A2A on 0.0.0.0:0: it is reachable beyond this machine"),
    (["--http", "8766"], 64, "'8766' is not HOST:PORT"),
    (["--timeout", "0"], 64, "--timeout"),
])
def test_an_unsafe_or_bad_option_is_refused_with_one_line(processes: Processes, broker: str,
                                                          argv: list[str], code: int,
                                                          line: str) -> None:
    proc = processes.start(a2a_serve_argv(broker, *argv), name="a2a-serve")
    assert proc.popen.wait(SECONDS) == code
    assert line in proc.output() and "Traceback" not in proc.output()


def test_without_the_a2a_extra_it_says_what_to_install(processes: Processes, broker: str,
                                                       tmp_path: Path) -> None:
    # the SDK is installed here: a module first on the path stands for an environment without it
    (tmp_path / "a2a.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'a2a'\", name='a2a')\n")
    proc = processes.start(a2a_serve_argv(broker), env={"PYTHONPATH": str(tmp_path)},
                           name="a2a-serve")
    assert proc.popen.wait(SECONDS) == 78
    assert ("robotlab a2a-serve needs the a2a extra (a2a is missing): pip install "
            "'robotlab[a2a]'") in proc.output()
    assert "Traceback" not in proc.output()
