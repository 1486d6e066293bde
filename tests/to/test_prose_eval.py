"""The prose eval: floor, pairwise judge through the LLM seam, structured verdicts."""

from __future__ import annotations

from pathlib import Path

from robotlab.testing import requests_seen, serve_script
from robotlab.to.child.robot_factory import RobotModel, judge
from robotlab.to.evals import Context, ProseEval
from robotlab.to.evals.prose import parse_verdict
from tests.to.conftest import Runner, git, write_and_submit


def _context(repo: Path) -> Context:
    return Context(str(repo), git(repo, "rev-parse", "HEAD").strip(), None, "write a guide", 1)


def test_the_judge_sees_named_files_and_its_verdict_is_structured(repo: Path) -> None:
    (repo / "guide.md").write_text("old text\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "guide")
    (repo / "guide.md").write_text("new, better text\n")
    verdict = '{"verdict": "better", "reason": "clearer"}'
    with serve_script([{"content": verdict,
                        "usage": {"prompt_tokens": 30, "completion_tokens": 7}}]) as url:
        score = ProseEval(judge(RobotModel(model="openai/scripted",
                                           api_base=url))).score(_context(repo))
        (request,) = requests_seen(url)
    assert score.gate_ok and score.improved and score.value is None
    assert score.detail.startswith("floor=true judge=better") and score.reply == verdict
    assert (score.input_tokens, score.output_tokens) == (30, 7)
    user = request["messages"][-1]["content"]
    assert "=== guide.md ===" in user and "old text" in user and "new, better text" in user


def test_a_failing_floor_never_calls_the_judge(repo: Path) -> None:
    (repo / "README.md").write_text("changed\n")
    with serve_script([]) as url:
        evaluator = ProseEval(judge(RobotModel(model="openai/scripted", api_base=url)),
                              floor="echo floor-out; exit 1")
        score = evaluator.score(_context(repo))
        assert requests_seen(url) == []
    assert not score.gate_ok and "judge=worse" in score.detail and score.output == "floor-out"


def test_a_new_document_is_better_without_a_judge(repo: Path) -> None:
    (repo / "new.md").write_text("fresh\n")
    with serve_script([]) as url:
        score = ProseEval(judge(RobotModel(model="openai/scripted",
                                           api_base=url))).score(_context(repo))
        assert requests_seen(url) == []
    assert score.improved


def test_verdict_parsing() -> None:
    assert parse_verdict('{"verdict": "worse", "reason": "r"}') == ("worse", "r")
    assert parse_verdict("Version B is BETTER")[0] == "better"
    assert parse_verdict("not better, worse")[0] == "better"
    assert parse_verdict("no idea")[0] == "same"


def test_a_prose_run_locks_its_spec_and_counts_judge_tokens(runner: Runner, repo: Path) -> None:
    (repo / "outline.md").write_text("1. intro\n")
    (repo / "guide.md").write_text("draft\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "outline")
    turns = [
        {"tool_calls": [{"name": "write",
                         "arguments": {"path": "outline.md", "content": "easier"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "guide.md", "old_text": "draft",
                                                       "new_text": "intro!"}}]},
        {"tool_calls": [{"name": "read", "arguments": {"path": "guide.md"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "guide.md", "old_text": "draft",
                                                       "new_text": "intro!"}}]},
        *write_and_submit("x.md", "")[1:],
        {"content": '{"verdict": "better", "reason": "covers the intro"}',
         "usage": {"prompt_tokens": 1000, "completion_tokens": 10}},
    ]
    report = runner.run(turns, max_iterations=1, local_guards=True, eval="prose",
                        eval_spec="outline.md")
    assert report.run is not None and report.run.commits == 1
    assert (repo / "outline.md").read_text() == "1. intro\n"
    assert (repo / "guide.md").read_text() == "intro!\n"
    assert report.run.input_tokens > 1000
    (judged,) = [e for e in runner.events(report) if e["event"] == "eval"]
    assert "covers the intro" in judged["judge_reply"]
