"""Errors, retries, timeouts, decisions and resume, through the Python API."""

from __future__ import annotations

import json
import re
from pathlib import Path

from robotlab.testing import requests_seen
from tests.to.conftest import DONE, Runner, call, git, names, submit, write_and_submit

# A transient error: robot-to retries it. (A 400 is permanent and ends the run at once.)
FLAKY = {"error": {"status": 503, "message": "flaky upstream"}}
# The provider client retries a 503 three times on its own before robot-to sees it.
CLIENT_ATTEMPTS = 4


def test_errors_are_retried_then_fatal(runner: Runner, repo: Path) -> None:
    report = runner.run([FLAKY] * (3 * CLIENT_ATTEMPTS), max_retries=2)

    events = runner.events(report)
    assert report.exit_code == 1 and (report.reason or "").startswith("fatal:")
    assert names(events).count("agent:run:start") == 3
    assert names(events).count("iteration:start") == 1
    assert names(events).count("backoff:start") == 2
    notes = runner.notes(report)
    # one entry, its retries inside
    assert notes.count("### Iteration 1") == 1 and notes.count("[ERROR]") == 1
    assert "**Retried after 2 error(s):**" in notes


def test_an_error_then_success_commits_in_the_same_iteration(runner: Runner) -> None:
    report = runner.run([FLAKY] * CLIENT_ATTEMPTS + write_and_submit("a.txt", "x\n"),
                        max_iterations=1, local_guards=True)

    assert report.exit_code == 0 and runner.subjects()[0] == "robot-to 1: did it"
    notes = runner.notes(report)
    assert "[ERROR]" not in notes and notes.count("### Iteration 1") == 1
    assert "**Retried after 1 error(s):**\n- InferenceError:" in notes
    # The attempt that erred was rolled back, but the iteration committed.
    assert "(1 committed, 0 rolled back)" in report.summary


def test_authentication_errors_are_permanent(runner: Runner) -> None:
    report = runner.run([{"error": {"status": 401, "message": "invalid api key"}}] * 3)

    assert report.exit_code == 1
    assert (report.reason or "").startswith("permanent error: API authentication failed")
    assert names(runner.events(report)).count("agent:run:start") == 1


def test_a_hung_model_call_is_killed_by_the_iteration_timeout(runner: Runner) -> None:
    turns = [{"content": "slow", "delay": 30}, {"content": "slow", "delay": 30}]
    report = runner.run(turns, iteration_timeout=0.5, max_retries=0)

    assert report.exit_code == 1
    assert "iteration-timeout" in (report.reason or "")
    assert "IterationTimeout" in runner.notes(report)


def test_repeated_identical_tool_calls_end_the_attempt(runner: Runner) -> None:
    (runner.repo / "a.txt").write_text("a\n")
    git(runner.repo, "add", "-A")
    git(runner.repo, "commit", "-qm", "a")
    turns = [call("read", path="a.txt")] * 4 + [DONE]
    report = runner.run(turns, local_guards=True, max_retries=0)

    assert "repeated_tool_call" in runner.notes(report)
    assert report.exit_code == 1


def test_a_decision_is_recorded_and_the_work_committed(runner: Runner) -> None:
    turns = [
        call("request_decision", question="404 or 410?", recommendation="410", blocking=False),
        *write_and_submit("a.txt", "x\n"),
    ]
    report = runner.run(turns, max_iterations=1, local_guards=True)

    files = list((runner.run_dir(report) / "decisions").glob("d-*.md"))
    assert len(files) == 1 and "status: pending" in files[0].read_text()
    assert "**Blocking:** no" in runner.notes(report)
    assert "decision:raised" in names(runner.events(report))
    assert len(runner.subjects()) == 2


def test_exit_mode_pauses_and_resume_continues_with_no_flags(runner: Runner) -> None:
    turns = [
        call("request_decision", question="404 or 410?", blocking=True),
        *write_and_submit("a.txt", "x\n"), *write_and_submit("b.txt", "y\n"),
    ]
    with runner.serving(turns):
        first = runner.run(max_iterations=2, local_guards=True, decision_mode="exit")
        assert first.exit_code == 0 and first.run is not None
        assert "awaiting human decision" in (first.reason or "")
        assert f"--resume {first.run.run_id}" in first.reason
        decision = next((runner.run_dir(first) / "decisions").glob("d-*.md"))
        text = decision.read_text().replace("status: pending", "status: resolved")
        decision.write_text(re.sub(r"resolution: null", "resolution: go with 410", text))
        second = runner.resume(first.run.run_id)

    assert second.reason == "max iterations reached (2)"
    assert runner.subjects()[:2] == ["robot-to 2: did it", "robot-to 1: did it"]
    assert "status: closed" in decision.read_text()
    assert "orchestrator:resume" in names(runner.events(second))


def test_wait_mode_times_out(runner: Runner) -> None:
    turns = [call("request_decision", question="which?", blocking=True),
             *write_and_submit("a.txt", "x\n")]
    report = runner.run(turns, local_guards=True, decision_mode="wait", decision_timeout=0.1)

    assert "timed out" in (report.reason or "")
    assert "decision:wait:start" in names(runner.events(report))


def test_resume_of_an_unknown_run_is_refused(runner: Runner) -> None:
    report = runner.resume("20260101-000000-abcdef")

    assert report.exit_code == 2 and "no resumable run" in (report.reason or "")


def test_a_stop_condition_ends_the_run_on_a_committing_iteration(runner: Runner) -> None:
    turns = write_and_submit("a.txt", "x\n", should_fully_stop=True)
    report = runner.run(turns, local_guards=True, stop_when="the file exists")

    assert report.reason == "stop condition met: the file exists"
    assert report.exit_code == 0 and "robot-to complete" in report.summary


def test_a_custom_eval_object_and_a_registered_name(runner: Runner) -> None:
    import robotlab.to
    from robotlab.to import Score

    seen: list[int] = []

    class Judge:
        def score(self, context):
            seen.append(context.iteration)
            return Score(gate_ok=True, improved=True, met_target=True, value=7.0,
                         detail="custom ok")

    registry = robotlab.to.EvalRegistry()
    registry.register("mine", lambda settings: Judge())
    with runner.serving(write_and_submit("a.txt", "x\n")):
        report = robotlab.to.run("go", work_dir=str(runner.repo), registry=registry, eval="mine",
                                 model="openai/scripted", api_base=runner.url, local_guards=True,
                                 streams=runner._streams())
    assert report.reason == "target met: custom ok" and seen == [1]


def test_an_unknown_eval_is_a_usage_error(runner: Runner) -> None:
    report = runner.run([DONE], eval="nonsense")

    assert report.exit_code == 2 and "unknown eval strategy: nonsense" in (report.reason or "")
    assert submit(True)["tool_calls"][0]["name"] == "submit_iteration_result"


def test_a_callable_eval_and_a_custom_run_dir(runner: Runner, repo: Path) -> None:
    from robotlab.to import Score

    calls: list[str] = []

    def gate(context) -> Score:
        calls.append(context.previous_ref)
        return Score(gate_ok=False, improved=False, detail="callable says no", output="nope")

    report = runner.run(write_and_submit("a.txt", "x\n"), max_iterations=1, local_guards=True,
                        eval=gate, max_verify_repairs=0, run_dir="state/robot")
    assert len(calls) == 1 and "[VERIFY FAILED]" in runner.notes(report)
    assert (repo / "state" / "robot" / "runs").is_dir()
    assert "state/robot" in (repo / ".git" / "info" / "exclude").read_text()


def test_debug_echoes_the_events_to_stderr(runner: Runner, capsys) -> None:
    runner.run([submit(False, "no"), DONE], max_iterations=1, debug=True)

    err = capsys.readouterr().err
    assert '"event": "orchestrator:start"' in err and '"event": "orchestrator:end"' in err


def test_a_runaway_tool_is_killed_with_its_process_group(runner: Runner) -> None:
    import os
    import subprocess

    marker = f"sleep 7{os.getpid() % 1000}.5"
    turns = [call("bash", command=f"{marker} & {marker}; echo never", timeout=600), DONE]
    report = runner.run(turns, local_guards=True, iteration_timeout=1.5, max_retries=0)

    assert "IterationTimeout" in runner.notes(report)
    from tests.waiting import wait_until

    wait_until(lambda: marker not in subprocess.run(["ps", "-eo", "cmd"], capture_output=True,
                                                    text=True).stdout,
               timeout=5, message="no surviving sleep")


def test_the_run_directory_keeps_no_lock_files(runner: Runner) -> None:
    report = runner.run(write_and_submit("a.txt", "x\n") + [submit(False, "no"), DONE],
                        max_iterations=2, local_guards=True)

    assert report.exit_code == 0
    left = [p.name for p in runner.run_dir(report).rglob("*") if p.name.endswith((".lock", ".tmp"))]
    assert left == []


def test_a_context_window_overflow_is_compacted_and_the_attempt_continues(runner: Runner) -> None:
    overflow = {"error": {"status": 400,
                          "message": "This model's maximum context length is 8192 tokens"}}
    report = runner.run([call("read", path="README.md"), overflow,
                         *write_and_submit("a.txt", "x\n")],
                        max_iterations=1, local_guards=True)

    assert report.exit_code == 0, report.summary
    assert runner.subjects()[0] == "robot-to 1: did it"
    events = runner.events(report)
    (compacted,) = [e for e in events if e["event"] == "context:compacted"]
    assert compacted["messages_before"] >= compacted["messages_after"]
    assert compacted["retried"] is True
    assert names(events).count("agent:run:start") == 1 and "agent:run:error" not in names(events)


def test_a_context_window_overflow_that_still_does_not_fit_ends_the_attempt(runner: Runner) -> None:
    overflow = {"error": {"status": 400,
                          "message": "This model's maximum context length is 8192 tokens"}}
    with runner.serving([overflow, overflow]) as url:
        report = runner.run(None, max_iterations=1, max_retries=0)
        seen = requests_seen(url)

    assert report.exit_code == 1
    (error,) = [e for e in runner.events(report) if e["event"] == "agent:run:error"]
    assert error["cause"] == "context_window" and error["permanent"] is True
    # The attempt's first request overflowed: nothing can shrink, so it is not sent again, and the
    # run says why.
    (compacted,) = [e for e in runner.events(report) if e["event"] == "context:compacted"]
    assert compacted["retried"] is False
    assert len(seen) == 1
    assert "context window" in report.reason and "--n_ctx" in report.reason


def test_model_retries_are_shown_with_their_wait_and_the_deadline_left(runner: Runner) -> None:
    report = runner.run([FLAKY, FLAKY, *write_and_submit("a.txt", "x\n")], max_iterations=1,
                        local_guards=True)

    assert report.exit_code == 0, report.summary
    err = runner.err.getvalue()
    assert "iteration 1: model call failed (server error) — retry 1/3 in 0.5s, " in err
    assert "iteration 1: model call failed (server error) — retry 2/3 in 1s, " in err
    assert "s left of the call's deadline" in err
    retries = [e for e in runner.events(report) if e["event"] == "model:retry"]
    assert [(e["attempt"], e["wait"]) for e in retries] == [(1, 0.5), (2, 1.0)]


def test_one_deadline_bounds_a_model_call_and_its_retries(runner: Runner) -> None:
    slow = {"content": "slow", "delay": 20}
    report = runner.run([slow, slow, slow], call_timeout=1, max_retries=0)

    assert report.exit_code == 1
    (error,) = [e for e in runner.events(report) if e["event"] == "agent:run:error"]
    assert "within its 1s time-out" in error["message"] and error["cause"] == "timeout"


def test_the_call_deadline_bounds_a_streamed_reply_that_keeps_coming(runner: Runner) -> None:
    # Forty words a quarter second apart: ten seconds of a reply that never stalls.
    endless = {"chunks": [f"word{i} " for i in range(40)], "chunk_delay": 0.25}
    with runner.serving([endless, endless, endless]) as url:
        report = runner.run(None, call_timeout=1.5, max_retries=0)
        seen = requests_seen(url)

    assert report.exit_code == 1
    (error,) = [e for e in runner.events(report) if e["event"] == "agent:run:error"]
    assert "within its 1.5s time-out" in error["message"] and error["cause"] == "timeout"
    assert len(seen) == 1, "the timed-out call was not sent again"


def test_an_iteration_retried_after_errors_counts_as_one_failure(runner: Runner) -> None:
    # Iteration 1 errs twice, is retried twice, then fails; iteration 2 fails.
    turns = [FLAKY] * (2 * CLIENT_ATTEMPTS) + [submit(False, "no"), DONE, submit(False, "still no"),
                                               DONE]
    report = runner.run(turns, max_iterations=2, max_retries=2, max_consecutive_failures=3)

    assert report.reason == "max iterations reached (2)" and report.exit_code == 0
    assert report.run is not None
    assert (report.run.consecutive_failures, report.run.iterations_since_improvement) == (2, 2)
    assert names(runner.events(report)).count("backoff:start") == 2
    state = json.loads((runner.run_dir(report) / "run.json").read_text())
    assert state["consecutive_failures"] == 2 and state["rolled_back"] == 2
    assert "(0 committed, 2 rolled back)" in report.summary

