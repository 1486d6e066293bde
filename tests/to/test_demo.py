"""The offline demo fixes its failing test and commits."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from robotlab.demo.robot_to import run_demo


def test_the_demo_fixes_the_test(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_demo(tmp_path) == 0

    out = capsys.readouterr().out
    assert "robot-to complete" in out and "fix(calc): fix add() to return the sum" in out
    repo = tmp_path / "robot-to-demo"
    assert "return a + b" in (repo / "calc.py").read_text()
    assert "== 5" in (repo / "test_calc.py").read_text()
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True,
                            text=True).stdout
    assert status == ""
