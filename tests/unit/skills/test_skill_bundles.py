"""Skill bundles (spec 17): SKILL.md parsing, script tools and their names, the catalog, and
the capability intersection."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

import robotlab
from robotlab.errors import ConfigError
from robotlab.llm import LiteLLMEmbedder
from robotlab.skills import AgentSkill, AgentSkillCatalog, Capabilities, ScriptTool
from robotlab.testing import ScriptedLLM, serve_script


def test_a_bundle_has_instructions_scripts_and_tools(bundle: Callable[..., Path]) -> None:
    skill_md = bundle("deploy", {"check-deploy.sh": "#!/bin/bash\n# Check the deploy is healthy\n"
                                                    "echo ok\n",
                                 "notes.txt": "not a script"},
                      body="\n  Check before shipping.  \n")
    (skill_md.parent / "scripts" / "notes.txt").chmod(0o644)
    skill = AgentSkill(skill_md)
    assert (skill.name, skill.description, skill.path) == ("deploy", "the deploy skill",
                                                           skill_md.parent)
    assert skill.instructions == "Check before shipping."
    assert [p.name for p in skill.scripts] == ["check-deploy.sh", "notes.txt"]
    [tool] = skill.script_tools
    assert (tool.name, tool.description) == ("check_deploy", "Check the deploy is healthy")
    assert tool.execute() == "ok\n"


def test_a_non_executable_script_gives_no_tool_and_one_warning(
        bundle: Callable[..., Path], caplog: pytest.LogCaptureFixture) -> None:
    skill_md = bundle("plain", {"run.sh": "echo hi\n"})
    (skill_md.parent / "scripts" / "run.sh").chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="robotlab.skills"):
        assert AgentSkill(skill_md).script_tools == []
    assert [r.getMessage() for r in caplog.records] == [
        "skill plain: run.sh is not executable; no tool made (chmod +x it)"]


def test_script_output_exit_status_and_arguments(bundle: Callable[..., Path]) -> None:
    skill = AgentSkill(
        bundle("echo", {"say.sh": "#!/bin/bash\necho \"$1|$2\"\necho err >&2\nexit ${3:-0}\n"}))
    [tool] = skill.script_tools
    assert tool.description == "say"
    assert tool.execute(args="'two words' b") == "two words|b\nerr\n"
    assert tool.execute(args="a b 3") == "Error (exit 3):\na|b\nerr\n"


@pytest.mark.parametrize(("meta", "error"), [
    ({"name": ""}, "front matter needs name"),
    ({"description": None}, "front matter needs description"),
])
def test_name_and_description_are_required(bundle: Callable[..., Path], meta: dict,
                                           error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        AgentSkill(bundle("x", **meta))


def test_malformed_front_matter_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "SKILL.md").write_text("---\nname: [unclosed\n---\nbody\n")
    with pytest.raises(ConfigError, match="bad front matter"):
        AgentSkill(tmp_path / "SKILL.md")


def test_the_catalog_finds_by_front_matter_name_and_skips_bad_bundles(
        bundle: Callable[..., Path], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bundle("folder-a", name="alpha")
    bundle("folder-b", name="beta")
    (tmp_path / "skills" / "broken").mkdir()
    (tmp_path / "skills" / "broken" / "SKILL.md").write_text("no front matter")
    catalog = AgentSkillCatalog(tmp_path / "skills")
    with caplog.at_level(logging.WARNING, logger="robotlab.skills"):
        assert [s.name for s in catalog.all()] == ["alpha", "beta"]
    assert catalog.find("beta").path.name == "folder-b"
    assert catalog.find("folder-a") is None
    assert "broken skipped" in caplog.text
    bundle("folder-c", name="gamma")
    assert catalog.find("gamma") is None
    catalog.reset()
    assert catalog.find("gamma") is not None


def test_the_grant_is_the_intersection_with_the_ceiling(tmp_path: Path) -> None:
    declared = Capabilities.from_mapping(
        {"fs_read": ["/etc", "./data"], "fs_write": ["./out", "/tmp"], "network": True,
         "timeout": 30})
    grant = declared.within(Capabilities.from_mapping({"fs_read": ["."], "fs_write": ["./out"],
                                                       "timeout": 60}),
                            cwd=tmp_path)
    assert grant.fs_read == (str(tmp_path.resolve() / "data"),)
    assert grant.fs_write == (str(tmp_path.resolve() / "out"),)
    assert grant.network is False
    assert grant.timeout == 30
    assert Capabilities(timeout=90).within(Capabilities(timeout=60)).timeout == 60


def test_capabilities_normalise_timeout_and_trust() -> None:
    assert Capabilities.from_mapping({"timeout": 0, "trust": "galactic"}) == Capabilities(
        timeout=60, trust="external")
    assert Capabilities.from_mapping({"trust": "core"}).trust == "core"
    with pytest.raises(ConfigError, match="fs_read must be a list of paths"):
        Capabilities.from_mapping({"fs_read": [1]})


def test_a_robot_calls_a_script_tool(bundle: Callable[..., Path]) -> None:
    [tool] = AgentSkill(bundle(
        "greet", {"hello.sh": "#!/bin/bash\n# Greet someone\necho \"hello $1\"\n"})).script_tools
    llm = ScriptedLLM([{"tool_calls": [{"name": "hello", "arguments": {"args": "bob"}}]},
                       {"content": "done"}])
    robotlab.build(local_tools=[tool], llm=llm).run("greet bob", tools="inherit")
    assert llm.requests[0].tool_names == ["hello"]
    assert llm.requests[1].tool_results() == ["hello bob\n"]
    assert ScriptTool.from_path(tool.path.parent / "missing.sh") is None


def test_the_catalog_matches_skills_to_a_message_at_the_threshold(
        bundle: Callable[..., Path], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    bundle("deploy", description="Deploy the web service and roll back a bad release")
    bundle("bake", description="Bake a chocolate cake with flour, sugar and cocoa")
    catalog = AgentSkillCatalog(tmp_path / "skills")
    [(skill, score)] = catalog.matching("Roll back the bad release of the web service, then deploy")
    assert skill.name == "deploy" and score >= 0.70
    assert catalog.matching("What is the weather like in Oslo?") == []
    assert [s.name for s, _ in catalog.matching("chocolate cake", threshold=0.1)] == ["bake"]
    with serve_script([]) as url:
        dead = url.replace("/v1", "/gone")
    with caplog.at_level(logging.WARNING, logger="robotlab.skills"):
        assert catalog.matching(
            "deploy", embedder=LiteLLMEmbedder("openai/e", api_base=dead, api_key="x")) == []
    assert "skill matching failed" in caplog.text
