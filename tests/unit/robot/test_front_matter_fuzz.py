"""Templates and skill bundles, fuzzed: whatever a front matter holds (any YAML value under the
keys robotlab reads), and whatever bytes a body holds, building and running the robot gives a
result or a ConfigError that says what to fix, never another exception."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import robotlab
from robotlab import ConfigError
from robotlab.skills.bundle import AgentSkill
from robotlab.testing import ScriptedLLM
from tests.json_values import json_values

FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

keys = st.sampled_from(["model", "temperature", "max_tokens", "top_p", "stop", "logit_bias",
                        "provider", "api_base", "parameters", "skills", "tools", "mcp",
                        "robot_name", "description", "capabilities", "fs_read", "fs_write",
                        "network", "timeout", "trust"])
front_matters = st.dictionaries(keys, json_values, max_size=4)
names = (f"fuzzed-{n}" for n in itertools.count())
"""A fresh template name per example: a file rewritten within the clock's tick keeps its mtime,
and a template is cached until its file's mtime changes."""


def runs_or_refuses(step: Callable[[], Any]) -> None:
    try:
        step()
    except ConfigError:
        pass


@FUZZ
@given(front_matters)
def test_a_template_of_any_front_matter_runs_or_is_a_config_error(
        prompts: Path, meta: dict[str, Any]) -> None:
    name = next(names)
    (prompts / f"{name}.md").write_text(f"---\n{yaml.safe_dump(meta)}---\nHello.\n")
    runs_or_refuses(lambda: robotlab.build(name="bob", template=name,
                                           llm=ScriptedLLM([{"content": "ok"}])).run("hi"))


@FUZZ
@given(st.binary(max_size=40))
def test_a_template_body_of_any_bytes_runs_or_is_a_config_error(prompts: Path,
                                                                 body: bytes) -> None:
    name = next(names)
    (prompts / f"{name}.md").write_bytes(b"---\ndescription: d\n---\n" + body)
    runs_or_refuses(lambda: robotlab.build(name="bob", template=name,
                                           llm=ScriptedLLM([{"content": "ok"}])).run("hi"))


@FUZZ
@given(front_matters, st.binary(max_size=20))
def test_a_skill_bundle_of_any_front_matter_loads_or_is_a_config_error(
        tmp_path: Path, meta: dict[str, Any], tail: bytes) -> None:
    skill = tmp_path / "SKILL.md"
    head = yaml.safe_dump({"name": "s", "description": "d", **meta})
    skill.write_bytes(f"---\n{head}---\n".encode() + tail)
    runs_or_refuses(lambda: AgentSkill(skill))
