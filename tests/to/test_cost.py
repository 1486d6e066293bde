"""Dollars: from litellm's price table per iteration, in run.log, run.json and the summary;
"unknown" for an unpriced model; --max-cost metered per call. Through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from robotlab.cli.robot_to import robot_to
from robotlab.errors import ConfigError
from robotlab.testing import requests_seen, serve_script
from robotlab.to import config
from tests.to.conftest import DONE, call, git, submit

PRICED = "openai/gpt-4o-mini"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
# litellm's table: $0.15 per million input tokens and $0.60 per million output tokens.
CALL_COST = 1000 * 0.15e-6 + 100 * 0.60e-6


def turn(**fields: Any) -> dict[str, Any]:
    return {**fields, "usage": USAGE}


def writes(count: int) -> list[dict[str, Any]]:
    return [turn(**call("write", path=f"f{i}.txt", content=f"{i}\n")) for i in range(count)]


def run_cli(url: str, model: str, *args: str) -> Result:
    return CliRunner().invoke(robot_to, ["Do work", "--model", model, "--api-base", url,
                                         "--local-guards", *args])


def state(repo: Path) -> dict[str, Any]:
    return json.loads(next((repo / ".robot_lab_to" / "runs").glob("*/run.json")).read_text())


def events(repo: Path, name: str) -> list[dict[str, Any]]:
    lines = next((repo / ".robot_lab_to" / "runs").glob("*/run.log")).read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == name]


def test_a_priced_model_reports_dollars_everywhere(repo: Path) -> None:
    with serve_script([*writes(1), turn(**submit(True)), turn(**DONE)]) as url:
        result = run_cli(url, PRICED, "--max-iterations", "1")

    assert result.exit_code == 0, result.output
    expected = 3 * CALL_COST
    assert state(repo)["cost_usd"] == pytest.approx(expected)
    (end,) = events(repo, "iteration:end")
    assert end["cost_usd"] == pytest.approx(expected) and end["tokens"] == 3 * 1100
    assert events(repo, "orchestrator:end")[0]["cost_usd"] == pytest.approx(expected)
    assert f"Cost:         ${expected:.4f}" in result.output


def test_an_unpriced_model_costs_unknown_never_zero(repo: Path) -> None:
    with serve_script([*writes(1), submit(True), DONE]) as url:
        result = run_cli(url, "openai/scripted", "--max-iterations", "1")

    assert result.exit_code == 0, result.output
    assert state(repo)["cost_usd"] is None
    assert events(repo, "iteration:end")[0]["cost_usd"] == "unknown"
    assert "Cost:         unknown (the model is not in litellm's price table)" in result.output


def test_max_cost_stops_inside_an_iteration_before_the_next_call(repo: Path) -> None:
    with serve_script([*writes(6), turn(**submit(True)), turn(**DONE)]) as url:
        result = run_cli(url, PRICED, "--max-cost", f"{2.5 * CALL_COST:.6f}", "--max-iterations",
                         "3")
        seen = requests_seen(url)

    assert result.exit_code == 0, result.output
    assert "Reason: max cost reached ($0.000525)" in result.output
    assert len(seen) == 3
    assert git(repo, "log", "--format=%s").splitlines() == ["initial"]
    assert events(repo, "budget:stop")


def test_max_cost_needs_a_priced_model(repo: Path) -> None:
    result = run_cli("http://127.0.0.1:9/v1", "openai/scripted", "--max-cost", "1")

    assert result.exit_code == 2
    assert ("--max-cost needs a price, and litellm's price table has none for "
            "openai/scripted") in result.output


def test_max_cost_from_the_environment_and_the_user_file(repo: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    (tmp_path / "xdg" / "robot_lab").mkdir(parents=True)
    (tmp_path / "xdg" / "robot_lab" / "to.yml").write_text("max_cost: 2.5\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert config.load().max_cost == 2.5
    monkeypatch.setenv("ROBOT_LAB_TO_MAX_COST", "1.25")
    assert config.load().max_cost == 1.25
    assert config.load({"max_cost": 0.5}).max_cost == 0.5


def test_a_user_file_that_is_not_utf8_is_a_config_error(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    (tmp_path / "xdg" / "robot_lab").mkdir(parents=True)
    (tmp_path / "xdg" / "robot_lab" / "to.yml").write_bytes(b"model: caf\xe9\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with pytest.raises(ConfigError, match=r"to.yml: not UTF-8 text .* save it as UTF-8"):
        config.load()


def test_an_unpriced_model_whose_every_call_failed_costs_unknown(repo: Path) -> None:
    with serve_script([{"error": {"status": 401, "message": "invalid api key"}}]) as url:
        result = run_cli(url, "openai/scripted", "--max-iterations", "1")

    assert result.exit_code == 1, result.output
    assert state(repo)["cost_usd"] is None
    assert events(repo, "orchestrator:end")[0]["cost_usd"] == "unknown"
    assert "Cost:         unknown (the model is not in litellm's price table)" in result.output
