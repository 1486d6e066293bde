"""A reply the output-token limit cut is reported, and a streaming reply moves the token count
before its call ends. Through the CLI in real git repositories, stderr not a terminal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from robotlab.cli.robot_to import robot_to
from robotlab.testing import requests_seen, serve_script
from tests.to.conftest import (
    DONE,
    call,
    robot_to_process,
    script_server_process,
    submit,
    write_and_submit,
)
from tests.to.test_live_view import events, run_cli


def test_a_cut_reply_is_a_run_log_event_and_a_progress_line(repo: Path) -> None:
    cut = {**call("write", path="a.txt", content="x\n"), "content": "Writing a.txt and then",
           "finish_reason": "length"}
    result = run_cli([cut, submit(True), DONE], "--max-output-tokens", "300")

    assert result.exit_code == 0, result.output
    assert [e["max_tokens"] for e in events(repo, "model:truncated")] == [300]
    line = ("robot-to: iteration 1: a model reply was cut at 300 output tokens "
            "(--max-output-tokens); raise it")
    assert line in result.stderr


def test_a_cut_reply_names_only_robot_to_s_flag(repo: Path, tmp_path: Path) -> None:
    turns = [{**call("write", path="a.txt", content="x\n"), "finish_reason": "length"},
             submit(True), DONE]
    with script_server_process(tmp_path, turns) as url:
        process = robot_to_process(repo, url, "--local-guards", "--max-iterations", "1",
                                   "--max-output-tokens", "300")
        _out, err = process.communicate(timeout=120)

    assert process.returncode == 0, err
    assert "a model reply was cut at 300 output tokens (--max-output-tokens)" in err
    # The library's own warning names robotd's flag, which a robot-to user cannot pass.
    assert "robotd --max-tokens" not in err and "max_tokens=N" not in err


def cut(path: str) -> dict[str, Any]:
    """A write call whose reply the output-token limit cut."""
    return {**call("write", path=path, content="x\n"), "content": "Writing and then",
            "finish_reason": "length"}


def test_cut_replies_are_counted_per_iteration_in_run_json_and_the_summary(repo: Path) -> None:
    result = run_cli([cut("a.txt"), cut("b.txt"), submit(True), DONE], "--max-output-tokens", "300")

    assert result.exit_code == 0, result.output
    state = json.loads(next((repo / ".robot_lab_to" / "runs").glob("*/run.json")).read_text())
    assert (state["truncated"], state["cut_at"]) == ({"1": 2}, 300)
    assert ("  Cut:          2 replies were cut at 300 tokens: raise --max-output-tokens (0: no "
            "cap)") in result.stdout


def test_the_json_summary_counts_cut_replies_and_a_run_without_any_says_nothing(repo: Path) -> None:
    cut_run = run_cli([cut("a.txt"), submit(True), DONE], "--max-output-tokens", "300", "--json")
    clean_run = run_cli([call("write", path="b.txt", content="y\n"), submit(True), DONE])

    assert cut_run.exit_code == 0, cut_run.output
    summary = json.loads(cut_run.stdout)
    assert (summary["truncated_replies"], summary["max_output_tokens"]) == (1, 300)
    assert clean_run.exit_code == 0, clean_run.output
    assert "Cut:" not in clean_run.stdout and "Iterations:" in clean_run.stdout


def test_zero_sends_no_cap(repo: Path) -> None:
    with serve_script(write_and_submit("a.txt", "x\n")) as url:
        result = CliRunner().invoke(robot_to, ["work", "--model", "openai/scripted", "--api-base",
                                               url, "--max-iterations", "1", "--local-guards",
                                               "--max-output-tokens", "0"])
        seen = requests_seen(url)
    assert result.exit_code == 0, result.output
    assert ["max_tokens" in body for body in seen] == [False, False, False]


def test_a_streaming_reply_reports_growing_token_counts_before_its_call_ends(repo: Path) -> None:
    # Twelve chunks 0.2 s apart, then the call ends with the submit; the meter reports every 0.5 s.
    slow = {**submit(True), "chunks": [f"word{i} " for i in range(12)], "chunk_delay": 0.2,
            "usage": {"prompt_tokens": 100, "completion_tokens": 40}}
    result = run_cli([call("write", path="a.txt", content="x\n"), slow, DONE])

    assert result.exit_code == 0, result.output
    streaming = events(repo, "model:streaming")
    assert len(streaming) >= 2, streaming
    counts = [e["chunks"] for e in streaming]
    # the 12 words, then the submit's arguments
    assert counts == sorted(counts) and counts[0] < counts[-1] <= 13
    # The first call's usage (10 in, 5 out by default) is in; the streaming call's is an estimate.
    assert streaming[-1]["output_tokens"] == 5 + counts[-1]
    assert all(e["input_tokens"] == 10 for e in streaming)
    run_log = next((repo / ".robot_lab_to" / "runs").glob("*/run.log")).read_text().splitlines()
    order = [json.loads(line)["event"] for line in run_log]
    second_call = order.index("tool:call", order.index("tool:call") + 1)
    assert order.index("model:streaming") < second_call, (
        "the counts came before the streamed call ended")


def test_a_long_write_moves_the_count_while_its_arguments_stream(repo: Path) -> None:
    # No text at all: the call's JSON arguments (the file's content) stream in 12 pieces 0.2 s
    # apart.
    long_write = {**call("write", path="big.txt", content="line of the file\n" * 200),
                  "argument_chunks": 12, "chunk_delay": 0.2}
    result = run_cli([long_write, submit(True), DONE])

    assert result.exit_code == 0, result.output
    assert (repo / "big.txt").read_text() == "line of the file\n" * 200
    streaming = events(repo, "model:streaming")
    assert len(streaming) >= 2, streaming
    counts = [e["chunks"] for e in streaming]
    assert counts == sorted(counts) and counts[0] < counts[-1] <= 12
    # nothing was counted before this first call
    assert streaming[-1]["output_tokens"] == counts[-1]
    run_log = next((repo / ".robot_lab_to" / "runs").glob("*/run.log")).read_text().splitlines()
    order = [json.loads(line)["event"] for line in run_log]
    assert order.index("model:streaming") < order.index("tool:call"), (
        "the counts came before the write ran")


def test_the_live_line_marks_a_streaming_estimate() -> None:
    from robotlab.to.record.status import LiveState

    streaming = LiveState(iteration=1, phase="robot", tokens=12_401, cost=0.0125, estimated=True)
    assert streaming.line(5) == "iteration 1 · robot · ~12,401 tokens · ~$0.0125 · 0m 05s"
    assert LiveState(tokens=5, cost=None,
                     estimated=True).line(0).endswith("~5 tokens · unknown · 0m 00s")
    assert "~" not in LiveState(tokens=5).line(0)
