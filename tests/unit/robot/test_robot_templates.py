"""Templates and skills (spec 2, 7): lookup, front matter, parameters, composition."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import robotlab
from robotlab import ConfigError
from robotlab.testing import ScriptedLLM

Write = Callable[..., Path]


def test_render_template_substitutes_parameters(template: Write) -> None:
    template("objective", "Work on {{ topic }} for {{ who }}.",
             parameters={"topic": None, "who": "us"})
    assert robotlab.render_template("objective", topic="x") == "Work on x for us."


def test_render_template_names_the_missing_required_parameter(template: Write) -> None:
    template("objective", "Work on {{ topic }}.", parameters={"topic": None})
    with pytest.raises(ConfigError, match="Missing required parameters: topic"):
        robotlab.render_template("objective")


def test_undefined_variable_in_the_body_fails_loudly(template: Write) -> None:
    template("loose", "Hello {{ nobody }}")
    with pytest.raises(ConfigError, match="nobody"):
        robotlab.render_template("loose")


def test_missing_template_lists_where_it_looked(prompts: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        robotlab.render_template("ghost")
    assert "ghost.md" in str(caught.value)
    assert str(prompts) in str(caught.value)


def test_environment_variable_template_path(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "env_prompts").mkdir()
    (tmp_path / "env_prompts" / "hi.md").write_text("Hi from env.")
    monkeypatch.setenv("ROBOT_LAB_TEMPLATE_PATH", str(tmp_path / "env_prompts"))
    robotlab.reload_config()
    assert robotlab.render_template("hi") == "Hi from env."


def test_template_plus_system_prompt_make_one_system_message(template: Write) -> None:
    template("helper", "You help.")
    robot = robotlab.build(template="helper", system_prompt="X")
    system = [m for m in robot.messages if m["role"] == "system"]
    assert len(system) == 1
    assert system[0]["content"] == "You help.\n\nX"


def test_front_matter_llm_fields_all_apply_and_keywords_win(template: Write) -> None:
    template("tuned", "Body.", temperature=0.2, top_p=0.5, max_tokens=99, model="fm-model")
    llm = ScriptedLLM([{"content": "a"}, {"content": "b"}])
    robotlab.build(template="tuned", llm=llm).run("hi")
    params = llm.requests[0].params
    assert (params["temperature"], params["top_p"], params["max_tokens"],
            params["model"]) == (0.2, 0.5, 99, "fm-model")
    robotlab.build(template="tuned", temperature=0.9, llm=llm).run("hi")
    assert llm.requests[1].params["temperature"] == 0.9


def test_front_matter_provider_is_kept_on_rerender(template: Write) -> None:
    template("local", "Talk about {{ topic }}.", model="llama3.2", provider="ollama",
             parameters={"topic": "x"})
    llm = ScriptedLLM([{"content": "a"}])
    robotlab.build(template="local", llm=llm).run("hi", topic="boats")
    assert llm.requests[0].params["model"] == "ollama/llama3.2"
    assert llm.requests[0].system == "Talk about boats."


def test_required_parameter_defers_rendering_until_a_run_supplies_it(template: Write) -> None:
    template("support", "Help {{ customer }}.", parameters={"customer": None})
    llm = ScriptedLLM([{"content": "ok"}])
    robot = robotlab.build(template="support", llm=llm)
    assert robot.system_prompt is None
    robot.run("hi", customer="Bob")
    assert llm.requests[0].system == "Help Bob."


def test_front_matter_extras(template: Write) -> None:
    template("named", "Body.", robot_name="fm-name", description="from front matter",
             tools=["robotlab.testing.tools:EchoTool"])
    robot = robotlab.build(template="named")
    assert (robot.name, robot.description) == ("fm-name", "from front matter")
    assert [t.name for t in robot.local_tools] == ["echo"]
    assert robotlab.build(name="explicit", template="named", description="mine").name == "explicit"


def test_unknown_front_matter_tool_is_skipped_with_a_warning(
        template: Write, caplog: pytest.LogCaptureFixture) -> None:
    template("broken", "Body.", tools=["nowhere.module:Nothing"])
    with caplog.at_level(logging.WARNING):
        robot = robotlab.build(template="broken")
    assert robot.local_tools == []
    assert any("nowhere.module:Nothing" in r.getMessage() for r in caplog.records)


def test_skills_compose_depth_first(template: Write) -> None:
    template("C", "C body")
    template("A", "A body", skills=["C"])
    template("B", "B body")
    template("M", "M body")
    robot = robotlab.build(template="M", skills=["A", "B"])
    assert robot.system_prompt == "C body\n\nA body\n\nB body\n\nM body"


def test_skill_cycles_are_skipped_with_one_warning(template: Write,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    template("A", "A body", skills=["B"])
    template("B", "B body", skills=["A"])
    with caplog.at_level(logging.WARNING, logger="robotlab.prompt.skills"):
        robot = robotlab.build(skills=["A"])
    assert robot.system_prompt == "B body\n\nA body"
    assert len([r for r in caplog.records if "already included" in r.getMessage()]) == 1


def test_skill_config_cascades_under_the_main_template(template: Write) -> None:
    template("S", "S", temperature=0.1, top_k=7)
    template("M", "M", temperature=0.4, skills=["S"])
    robot = robotlab.build(template="M")
    assert (robot.config.temperature, robot.config.top_k) == (0.4, 7)


def test_a_broken_jinja_body_names_the_file_and_its_line(template: Write) -> None:
    path = template("broken", "Line one.\nLine two {% if x %} never closed.\n",
                    parameters={"x": "1"})
    with pytest.raises(ConfigError) as caught:
        robotlab.render_template("broken")
    # Lines 1-4 of the file are the front matter: the block left open is on the file's line 6.
    assert str(caught.value) == (f"template broken: {path}, line 6: Unexpected end of template. "
                                 "Jinja was looking for the following tags: 'elif' or 'else' or "
                                 "'endif'. The innermost block that needs to be closed is 'if'.")


def test_a_template_rewritten_within_the_clocks_tick_is_read_again(template: Write) -> None:
    # A file rewritten within the file system's clock tick (a few ms on many kernels) keeps
    # its mtime; the test sets it back to show that case here, whatever this kernel's clock
    path = template("changing", "First version.")
    assert robotlab.render_template("changing") == "First version."
    first = path.stat()
    template("changing", "The second, longer version.")
    os.utime(path, ns=(first.st_atime_ns, first.st_mtime_ns))
    assert robotlab.render_template("changing") == "The second, longer version."
