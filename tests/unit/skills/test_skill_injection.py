"""Skill bundles matched to a run (spec 17, run-time matching): what the model is sent.

A robot built with ``skills=[...]`` whose ids name bundles in the skill catalog (the
``skills_path`` setting) has each run's message matched against the bundles' descriptions;
a match puts the skill's instructions first in that run's system message and its script tools
beside the robot's own, for that run only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest

import robotlab
from robotlab.llm import LiteLLMEmbedder
from robotlab.testing import ScriptedLLM, requests_seen, serve_script

DEPLOY = "Deploy the web service and roll back a bad release"
ON_TOPIC = "Roll back the bad release of the web service, then deploy"


@pytest.fixture
def skills(bundle: Callable[..., Path], tmp_path: Path) -> Path:
    """Two bundles in the catalog ``skills_path`` names: deploy (with a script) and bake."""
    bundle("deploy", {
        "check-deploy.sh": "#!/bin/bash\n# Check the release is healthy\necho healthy $1\n"},
           body="Run check_deploy before you answer.", description=DEPLOY)
    bundle("bake", body="Preheat the oven first.",
           description="Bake a chocolate cake with flour, sugar and cocoa")
    robotlab.configure(skills_path=str(tmp_path / "skills"))
    return tmp_path / "skills"


def test_a_matching_skill_leads_the_system_message_and_brings_its_tools(skills: Path) -> None:
    # Given a robot with two skill bundles and a tool of its own
    own = robotlab.Tool.create(name="status", description="service status", parameters={},
                               handler=lambda: "up")
    llm = ScriptedLLM([{"tool_calls": [{"name": "check_deploy", "arguments": {"args": "v2"}}]},
                       {"content": "healthy"}, {"content": "a cake"}])
    bot = robotlab.build(name="ops", system_prompt="You are ops.", skills=["deploy", "bake"],
                         local_tools=[own], llm=llm)
    # When a run's message matches the deploy skill
    bot.run(ON_TOPIC, tools="inherit")
    # Then the model saw deploy's instructions before the robot's prompt, and its script tool
    first, second = llm.requests[0], llm.requests[1]
    assert first.system == "Run check_deploy before you answer.\n\nYou are ops."
    assert first.tool_names == ["status", "check_deploy"]
    assert second.tool_results() == ["healthy v2\n"]
    # And the next run, about something else, gets neither
    bot.run("What is the weather like in Oslo?", tools="inherit")
    assert llm.requests[2].system == "You are ops."
    assert llm.requests[2].tool_names == ["status"]
    assert bot.system_prompt == "You are ops."


def test_skill_tools_follow_the_runs_tool_selection(skills: Path) -> None:
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}])
    bot = robotlab.build(skills=["deploy"], llm=llm)
    bot.run(ON_TOPIC)
    bot.run(ON_TOPIC, tools=["other"])
    assert [r.tool_names for r in llm.requests] == [[], []]
    assert llm.requests[0].system == "Run check_deploy before you answer."


def test_bundles_and_template_skills_mix_and_a_rerender_keeps_the_prepend(
        skills: Path, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "polite.md").write_text("---\n---\nBe polite.\n")
    (prompts / "support.md").write_text("---\nparameters:\n  customer: null\nskills: [bake]\n---\n"
                                        "Help {{ customer }}.\n")
    robotlab.configure(skills_path=str(skills), template_path=str(prompts))
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}])
    bot = robotlab.build(template="support", skills=["polite", "deploy"], llm=llm)
    # The template skill is always in; the bundles (deploy, and bake from front matter) are not
    bot.run("Chocolate cake: how much flour, sugar and cocoa do I bake it with?", customer="Bob")
    bot.run(ON_TOPIC, customer="Ann")
    assert llm.requests[0].system == "Preheat the oven first.\n\nBe polite.\n\nHelp Bob."
    assert llm.requests[1].system == ("Run check_deploy before you answer.\n\nBe polite.\n\nHelp "
                                      "Ann.")


def test_a_skill_id_that_is_neither_a_bundle_nor_a_template_is_an_error(skills: Path) -> None:
    with pytest.raises(robotlab.ConfigError, match="nowhere"):
        robotlab.build(skills=["nowhere"], llm=ScriptedLLM([]))


def test_matching_through_a_model_embedder_and_an_embedding_failure(
        skills: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The script server's embeddings count letters: the bake description is matched through
    # litellm's real HTTP path; then the robot's embedder points where nothing answers.
    asked = "Bake a chocolate cake with flour, sugar and cocoa, please"
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}])
    bot = robotlab.build(system_prompt="Hi.", skills=["bake"], llm=llm)
    with serve_script([]) as url:
        bot.memory.embedder = LiteLLMEmbedder("openai/letters", api_base=url, api_key="x")
        bot.run(asked)
        assert [r["input"] for r in requests_seen(url)] == [
            ["Bake a chocolate cake with flour, sugar and cocoa"], [asked]]
        bot.memory.embedder = LiteLLMEmbedder("openai/letters", api_base="http://127.0.0.1:1/v1",
                                              api_key="x")
        with caplog.at_level(logging.WARNING, logger="robotlab.skills"):
            bot.run(asked)
    assert llm.requests[0].system == "Preheat the oven first.\n\nHi."
    assert llm.requests[1].system == "Hi."
    assert "skill matching failed, no skills matched" in caplog.text
