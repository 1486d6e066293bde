"""Robots over real HTTP: litellm against the script server (spec 3, 4, 6, 9, 14; the LLM seam)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import robotlab
from robotlab.testing import load_script, requests_seen, serve_script
from robotlab.testing.llm_server import ScriptServer
from robotlab.testing.script import Script
from tests.waiting import wait_until


@pytest.fixture
def no_retries() -> None:
    robotlab.configure(ruby_llm={"max_retries": 0, "request_timeout": 20})


def http_robot(url: str, **opts: object) -> robotlab.Robot:
    return robotlab.build(name="http", model="openai/scripted", api_base=url, **opts)


def test_tool_loop_over_http_sums_usage_and_sends_tool_results(no_retries: None) -> None:
    add = robotlab.Tool.create(name="add", parameters={"properties": {"a": {"type": "integer"}}},
                               handler=lambda args: args["a"] + 1)
    turns = [{"tool_calls": [{"name": "add", "arguments": {"a": 1}}],
              "usage": {"prompt_tokens": 11, "completion_tokens": 2}},
             {"content": "two", "usage": {"prompt_tokens": 13, "completion_tokens": 1}}]
    with serve_script(turns) as url:
        result = http_robot(url, local_tools=[add], system_prompt="S").run("1+1?", tools="inherit")
        seen = requests_seen(url)
    assert result.reply == "two"
    assert (result.input_tokens, result.output_tokens) == (24, 3)
    assert [t["function"]["name"] for t in seen[0]["tools"]] == ["add"]
    assert seen[1]["messages"][-1] == {"role": "tool", "tool_call_id": "call_0_0", "name": "add",
                                       "content": "2"}
    assert seen[0]["messages"][0] == {"role": "system", "content": "S"}


def test_streaming_over_http_with_reasoning_and_usage(no_retries: None) -> None:
    chunks: list[str] = []
    with serve_script([{"chunks": ["Hel", "lo"], "reasoning_content": "thinking",
                        "usage": {"prompt_tokens": 8, "completion_tokens": 4}}]) as url:
        result = http_robot(url, on_content=chunks.append).run("hi")
        seen = requests_seen(url)
    assert chunks == ["Hel", "lo"]
    assert (result.reply, result.input_tokens, result.output_tokens) == ("Hello", 8, 4)
    assert seen[0]["stream"] is True
    assert seen[0]["stream_options"] == {"include_usage": True}


def test_streamed_tool_calls_over_http(no_retries: None) -> None:
    echo = robotlab.Tool.create(name="echo", handler=lambda args: args.get("text", ""))
    turns = [{"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, {"content": "done"}]
    with serve_script(turns) as url:
        result = http_robot(url, local_tools=[echo]).run("go", tools="inherit",
                                                         on_content=lambda c: None)
    assert result.reply == "done"
    assert result.tool_calls[0]["result"] == "x"


def test_thinking_text_fallback_over_http(no_retries: None) -> None:
    with serve_script([{"content": None, "reasoning_content": "only thoughts"}]) as url:
        assert http_robot(url).run("hi").reply == "only thoughts"


def test_provider_errors_become_inference_errors_with_the_providers_message(
        no_retries: None) -> None:
    with serve_script([{"error": {"status": 400, "message": "unsupported parameter"}}]) as url:
        with pytest.raises(robotlab.InferenceError, match="unsupported parameter") as caught:
            http_robot(url).run("hi")
    assert caught.value.status_code == 400
    # A bad request is permanent: sending it again unchanged cannot succeed.
    assert caught.value.cause == "bad_request" and not robotlab.retryable(caught.value)


def test_a_server_error_stays_retryable(no_retries: None) -> None:
    with serve_script([{"error": {"status": 503, "message": "loading model"}}]) as url:
        with pytest.raises(robotlab.InferenceError) as caught:
            http_robot(url).run("hi")
    assert caught.value.cause == "server" and robotlab.retryable(caught.value)


def test_exhausted_script_says_so(no_retries: None) -> None:
    with serve_script([]) as url:
        with pytest.raises(robotlab.InferenceError, match="script exhausted"):
            http_robot(url).run("hi")


def test_models_endpoint_and_unknown_paths() -> None:
    import urllib.error
    import urllib.request

    with serve_script([]) as url:
        with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
            assert json.loads(response.read())["data"][0]["id"] == "scripted"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(url.replace("/v1", "/nowhere"), timeout=5)


def test_server_command_prints_its_address_and_shares_the_script(tmp_path: Path) -> None:
    script = tmp_path / "script.yml"
    script.write_text("- content: first\n- content: second\n")
    process = subprocess.Popen([sys.executable, "-m", "robotlab.testing.llm_server", "--script",
                                str(script)],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline() if process.stdout else ""
        assert line.startswith("LISTENING http://127.0.0.1:")
        url = line.split()[1]
        replies = [http_robot(url).run("hi").reply for _ in range(2)]
        assert replies == ["first", "second"]
        assert len(requests_seen(url)) == 2
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()


def test_script_files_and_validation(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"turns": [{"content": "a", "delay": 0.01},
                                          {"error": {"status": 429, "message": "slow"}}]}))
    turns = load_script(path)
    assert turns[0].content == "a" and turns[0].delay == 0.01
    assert (turns[1].error_status, turns[1].error_message) == (429, "slow")
    with pytest.raises(robotlab.ConfigError, match="unknown keys"):
        Script.of([{"contnet": "typo"}])
    server = ScriptServer(Script.of([]))
    try:
        assert server.url.startswith("http://127.0.0.1:")
    finally:
        server.server_close()


def test_cost_comes_from_litellms_price_table(no_retries: None) -> None:
    usage = {"prompt_tokens": 1000, "completion_tokens": 1000}
    with serve_script([{"content": "a", "usage": usage}, {"content": "b", "usage": usage}]) as url:
        priced = robotlab.build(model="openai/gpt-4o-mini", api_base=url, cost_budget=1e-6)
        with pytest.raises(robotlab.InferenceError, match="Cost budget exceeded"):
            priced.run("hi")
        assert priced.budget_ledger.consumed("cost") > 0
        with pytest.raises(robotlab.BudgetExceeded):
            priced.run("again")
        assert http_robot(url).run("hi").cost == 0.0


def test_price_is_zero_for_unknown_models_and_never_raises() -> None:
    from robotlab.llm import price

    assert price("openai/no-such-model-anywhere", 10, 10) == 0.0
    assert price("gpt-4o-mini", 1000, 1000) > 0


def test_streamed_thinking_text_is_the_reply_when_content_is_empty(no_retries: None) -> None:
    with serve_script([{"content": None, "reasoning_content": "deep thoughts"}]) as url:
        assert http_robot(url, on_content=lambda chunk: None).run("hi").reply == "deep thoughts"


def test_delayed_turns_make_slow_models(no_retries: None) -> None:
    import time

    with serve_script([{"content": "late", "delay": 0.3}]) as url:
        started = time.monotonic()
        assert http_robot(url).run("hi").reply == "late"
        assert time.monotonic() - started >= 0.3


def test_the_default_temperature_reaches_the_server_and_drop_params_does_not(
        no_retries: None) -> None:
    with serve_script([{"content": "ok"}]) as url:
        http_robot(url).run("hi")
        [body] = requests_seen(url)
    assert body["temperature"] == 0.7 and "drop_params" not in body


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
def test_a_count_the_provider_reported_is_not_estimated(no_retries: None, streamed: bool) -> None:
    with serve_script([{"content": "hi",
                        "usage": {"prompt_tokens": 7, "completion_tokens": 3}}]) as url:
        result = http_robot(url).run("hello", on_content=(lambda _chunk: None) if streamed
                                     else None)
    assert (result.raw.usage.input_tokens, result.raw.usage.output_tokens,
            result.raw.usage.estimated) == (7, 3, False)


def test_a_plain_reply_without_usage_is_marked_estimated(no_retries: None) -> None:
    # A local server that sends no usage: litellm reports 0 tokens, which are not the server's
    # count.
    with serve_script([{"content": "hi there", "usage": None}]) as url:
        result = http_robot(url).run("hello")
    assert result.reply == "hi there" and result.raw.usage.estimated


def test_a_process_that_called_a_model_over_http_exits_with_no_socket_left_open() -> None:
    # litellm keeps each api-base's HTTP client, with its keep-alive connections, between calls;
    # at exit the process closes them instead of leaving every pooled socket to the collector
    script = (
        "import robotlab\n"
        "from robotlab.testing import serve_script\n"
        "with serve_script([{'content': 'a'}, {'content': 'b'}]) as url:\n"
        "    robot = robotlab.build(name='http', model='openai/scripted', api_base=url)\n"
        "    print(robot.run('1').reply, robot.run('2').reply)\n"
    )
    done = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", script],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "a b"
    assert "ResourceWarning" not in done.stderr, done.stderr


def test_a_script_server_ends_its_connections_when_its_block_ends() -> None:
    def serving() -> list[str]:
        return [t.name for t in threading.enumerate() if "process_request" in t.name]

    before = set(serving())
    with serve_script([{"content": "hi"}]) as url:
        host, port = url.split("//")[1].split("/")[0].split(":")
        # a client keeping its connection open between requests, as litellm's pool does
        client = http.client.HTTPConnection(host, int(port))
        client.request("GET", "/v1/models")
        assert client.getresponse().read()
        assert set(serving()) - before
    try:
        wait_until(lambda: not set(serving()) - before, timeout=10,
                   message="the server's thread for the kept connection ended")
    finally:
        client.close()
