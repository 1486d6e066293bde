"""Fixtures for skill-bundle tests: write a bundle, and a clean global config around each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

import robotlab


@pytest.fixture(autouse=True)
def _clean_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    robotlab.reload_config()
    yield
    robotlab.reload_config()


@pytest.fixture
def bundle(tmp_path: Path) -> Callable[..., Path]:
    """Write ``<tmp>/skills/<folder_name>/SKILL.md`` plus executable scripts; returns the SKILL.md
    path."""

    def write(folder_name: str, scripts: dict[str, str] | None = None, body: str = "Use it well.",
              **front_matter: object) -> Path:
        folder = tmp_path / "skills" / folder_name
        (folder / "scripts").mkdir(parents=True, exist_ok=True)
        meta = {"name": folder_name, "description": f"the {folder_name} skill", **front_matter}
        skill_md = folder / "SKILL.md"
        skill_md.write_text(f"---\n{yaml.safe_dump(meta)}---\n{body}\n", encoding="utf-8")
        for filename, text in (scripts or {}).items():
            script = folder / "scripts" / filename
            script.write_text(text, encoding="utf-8")
            script.chmod(0o755)
        return skill_md

    return write
