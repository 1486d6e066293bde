"""Fixtures for robot-core tests: a clean global config and hook registry around each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import robotlab


@pytest.fixture(autouse=True)
def _clean_globals(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Each test starts from the bundled defaults, in an empty working directory, with no hooks."""
    monkeypatch.chdir(tmp_path)
    for name in ("ROBOT_LAB_ENV", "ROBOT_LAB_TEMPLATE_PATH", "ROBOT_LAB_RUBY_LLM__MODEL",
                 "ROBOT_LAB_LLM__MODEL"):
        monkeypatch.delenv(name, raising=False)
    robotlab.reload_config()
    robotlab.clear_hooks()
    yield
    robotlab.clear_hooks()
    robotlab.reload_config()


@pytest.fixture
def prompts(tmp_path: Path) -> Path:
    """A template directory on the configured path; write ``<name>.md`` files into it."""
    directory = tmp_path / "prompts_dir"
    directory.mkdir()
    robotlab.configure(template_path=str(directory))
    return directory


@pytest.fixture
def template(prompts: Path) -> Callable[..., Path]:
    """Write ``<name>.md`` (YAML front matter from keyword arguments) into the template
    directory."""
    import yaml

    def write(name: str, body: str, **front_matter: object) -> Path:
        head = f"---\n{yaml.safe_dump(front_matter)}---\n" if front_matter else ""
        path = prompts / f"{name}.md"
        path.write_text(head + body, encoding="utf-8")
        return path

    return write
