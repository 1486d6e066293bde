"""The atheris fuzz target for protocol decoding, run for a bounded time in its own process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process

TARGET = Path(__file__).parent / "fuzz" / "protocol_target.py"
SECONDS = 8


def test_coverage_guided_fuzzing_finds_no_crash_in_decode(tmp_path: Path) -> None:
    pytest.importorskip("atheris",
                        reason="atheris is in the dev extra; it did not install for this Python")
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    run = subprocess.run(
        [sys.executable, str(TARGET), str(corpus), f"-max_total_time={SECONDS}",
         "-rss_limit_mb=1024", f"-artifact_prefix={tmp_path}/"],
        # slow on a loaded box
        capture_output=True, text=True, timeout=SECONDS + 180, cwd=Path(__file__).parents[2],
    )
    crashes = [path.read_bytes() for path in tmp_path.glob("crash-*")]
    assert run.returncode == 0, (crashes, run.stderr[-3000:])
    assert "Done" in run.stderr and "cov:" in run.stderr  # it really ran, coverage-guided
    assert any(corpus.iterdir())  # and kept inputs that reached new code
