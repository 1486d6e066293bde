"""One deadline per model call, over real HTTP: litellm against the script server.

The server here is robotlab's own scripted one (no model weights); tests/model/ does the same
against a real llama.cpp server.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import robotlab
from robotlab.errors import InferenceError
from robotlab.errors.causes import EMPTY_STREAM, Cause
from robotlab.inference import deadline, pace
from robotlab.llm import LiteLLM
from robotlab.testing import requests_seen, serve_script

MESSAGES = [{"role": "user", "content": "hi"}]


@pytest.fixture(autouse=True, scope="module")
def _litellm_loaded() -> None:
    """litellm's first import takes seconds under load; the deadlines here are the model's."""
    with serve_script([{"content": "warm"}]) as url:
        LiteLLM().complete(MESSAGES, [], params(url))


def params(url: str, **more: Any) -> dict[str, Any]:
    return {"model": "openai/scripted", "api_base": url, "api_key": "not-needed", **more}


def timed(call: Any) -> tuple[float, Any]:
    started = time.monotonic()
    try:
        return time.monotonic() - started, call()
    except InferenceError as exc:
        return time.monotonic() - started, exc


def test_a_streamed_reply_that_keeps_coming_is_cut_at_the_deadline_and_not_retried() -> None:
    # 40 words, 0.25 s apart: ten seconds of a reply that never stalls long enough for a read
    # time-out.
    turn = {"chunks": [f"w{i} " for i in range(40)], "chunk_delay": 0.25}
    heard: list[str] = []
    with serve_script([turn, turn]) as url:
        took, error = timed(lambda: LiteLLM(max_retries=3, timeout=2.0).complete(
            MESSAGES, [], params(url), heard.append))
        seen = requests_seen(url)
    assert isinstance(error, InferenceError)
    assert error.cause == Cause.TIMEOUT and "its 2s time-out" in str(error)
    assert took < 3.0, f"the call took {took:.1f}s against a 2 s deadline"
    assert 0 < len(heard) < 40
    assert len(seen) == 1, "a call with no time left is not retried"


def test_a_reply_that_never_starts_is_abandoned_at_the_deadline() -> None:
    with serve_script([{"content": "late", "delay": 6}]) as url:
        took, error = timed(lambda: LiteLLM(max_retries=3,
                                            timeout=1.5).complete(MESSAGES, [], params(url)))
        seen = requests_seen(url)
    assert isinstance(error, InferenceError) and error.cause == Cause.TIMEOUT
    assert took < 2.5
    assert len(seen) == 1


def test_the_callers_deadline_bounds_a_call_with_a_longer_timeout_of_its_own() -> None:
    with serve_script([{"content": "late", "delay": 6}]) as url, deadline.within(1.0):
        took, error = timed(lambda: LiteLLM(timeout=60).complete(MESSAGES, [], params(url)))
    assert isinstance(error, InferenceError) and error.cause == Cause.TIMEOUT
    assert "the caller's deadline" in str(error)
    assert took < 2.0


def test_nested_deadlines_keep_the_sooner() -> None:
    with deadline.within(1.0) as outer, deadline.within(100) as inner:
        assert inner == outer
    assert deadline.ambient() is None


@pytest.mark.parametrize(("status", "message", "cause"), [
    (400, "the request exceeds the available context size (n_ctx 512)", Cause.CONTEXT_WINDOW),
    (400, "This model's maximum context length is 8192 tokens", Cause.CONTEXT_WINDOW),
    (401, "Incorrect API key provided", Cause.AUTH),
    (404, "The model `nope` does not exist", Cause.MODEL_NOT_FOUND),
    (400, "'temperature' must be a number", Cause.BAD_REQUEST),
])
def test_permanent_failures_are_sent_once_and_retryable_agrees(
        status: int, message: str, cause: Cause) -> None:
    retries: list[dict[str, Any]] = []
    turns = [{"error": {"status": status, "message": message}}, {"content": "should not be asked"}]
    with serve_script(turns) as url:
        error = timed(lambda: LiteLLM(max_retries=3, timeout=30, on_retry=retries.append)
                      .complete(MESSAGES, [], params(url)))[1]
        seen = requests_seen(url)
    assert isinstance(error, InferenceError)
    assert (error.cause, error.permanent, robotlab.retryable(error)) == (cause, True, False)
    assert len(seen) == 1 and retries == []


def test_an_empty_stream_is_a_failed_call_that_names_the_likely_cause() -> None:
    with serve_script([{"empty_stream": True}, {"content": "should not be asked"}]) as url:
        error = timed(lambda: LiteLLM(max_retries=3, timeout=30).complete(
            MESSAGES, [], params(url), lambda c: None))[1]
        seen = requests_seen(url)
    assert isinstance(error, InferenceError)
    assert error.cause == Cause.CONTEXT_WINDOW and EMPTY_STREAM in str(error)
    assert not robotlab.retryable(error)
    assert len(seen) == 1


def test_a_transient_failure_is_retried_inside_the_deadline_and_each_retry_is_told() -> None:
    retries: list[dict[str, Any]] = []
    with serve_script([{"error": {"status": 503, "message": "loading model"}},
                       {"content": "ok"}]) as url:
        reply = LiteLLM(max_retries=2, timeout=30,
                        on_retry=retries.append).complete(MESSAGES, [], params(url))
    assert reply.content == "ok"
    assert [(r["attempt"], r["of"], r["cause"]) for r in retries] == [(1, 2, "server")]
    assert 0 < retries[0]["deadline_left"] <= 30


def test_retries_wait_the_interval_then_grow_by_the_backoff_factor() -> None:
    retries: list[dict[str, Any]] = []
    turns = [{"error": {"status": 503, "message": "busy"}}] * 2 + [{"content": "ok"}]
    with serve_script(turns) as url:
        client = LiteLLM(max_retries=2, timeout=30, on_retry=retries.append, retry_interval=0.05,
                         backoff_factor=3)
        reply = client.complete(MESSAGES, [], params(url))
    assert reply.content == "ok"
    assert [r["wait"] for r in retries] == [0.05, 0.15]


def test_no_retry_is_announced_when_the_deadline_leaves_no_time_for_it() -> None:
    retries: list[dict[str, Any]] = []
    turns = [{"error": {"status": 503, "message": "busy"}, "delay": 1.2}, {"content": "too late"}]
    with serve_script(turns) as url:
        error = timed(lambda: LiteLLM(max_retries=3, timeout=1.6, on_retry=retries.append)
                      .complete(MESSAGES, [], params(url)))[1]
        seen = requests_seen(url)
    assert isinstance(error, InferenceError) and error.cause == Cause.SERVER
    assert retries == [] and len(seen) == 1


def test_a_call_with_no_timeout_is_sized_from_its_output_cap_and_the_measured_rate() -> None:
    model = "openai/pace-test"
    assert pace.sized_timeout(model, 4096) == pace.FIRST_CALL_SECONDS
    pace.record(model, 200, 10.0)  # 20 tokens/s
    assert pace.sized_timeout(model, 4096) == pytest.approx(
        pace.PROMPT_ALLOWANCE + pace.MARGIN * 4096 / 20)
    assert pace.sized_timeout(model, 64) == pace.SHORTEST
    assert pace.sized_timeout(model, None) == pace.FIRST_CALL_SECONDS
