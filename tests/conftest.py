"""Fixtures shared by every test: a quiet, isolated environment."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch,
                  tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep user config and a developer's broker address out of every test."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("ROBOT_LAB_BROKER", raising=False)
    monkeypatch.delenv("ROBOTLAB_BROKER", raising=False)  # its old name, still read
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
