"""Tool calls a small local model wrote as text, read by ``parse_text_tool_calls``.

The ``QWEN_*`` texts are verbatim replies of Qwen2.5-Coder 0.5B Instruct (Q4_K_M, llama.cpp's
server) to robot-to's prompt in bench/robot_to_real.py runs.
"""

from __future__ import annotations

import robotlab
from robotlab.robot.text_tool_calls import fitting_tool, parse_file_blocks, parse_text_tool_calls
from robotlab.testing import ScriptedLLM
from robotlab.to.tools.files import SCHEMAS
from robotlab.to.tools.submit import SUBMIT_NAME, SUBMIT_SCHEMA

TOOLS = {name: schema for name, (_, schema) in SCHEMAS.items()} | {
    "bash": {"type": "object",
             "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
             "required": ["command"]},
    SUBMIT_NAME: SUBMIT_SCHEMA,
}

# The task's title as the tool name; the arguments are read's.
QWEN_TITLE_AS_NAME = (
    '```json\n{\n  "name": "First n in slicing.py returns one item too few",\n  "arguments": {\n'
    '    "path": ".robot_lab_to/runs/20261204-181931-a9171b/slicing.py",\n    "offset": 1,\n'
    '    "limit": 5\n  },\n  "should_fully_stop": false,\n  "type": "feat"\n}\n```'
)
# A line of the prompt as the tool name; a path alone fits read only (write and edit need more).
QWEN_PROMPT_LINE_AS_NAME = (
    '```json\n{\n  "name": "Success=true with one-sentence summary and key_changes",\n  '
    '"arguments": {\n    "path": ".robot_lab_to/runs/20261204-181931-a9171b/slicing.py"\n  },\n  '
    '"should_fully_stop": false,\n  "type": "feat"\n}\n```'
)

# A call, then a stray line (the start of another object, never closed).
QWEN_CALL_THEN_STRAY_LINE = (
    '{"name": "submit_iteration_result", "arguments": {"success": true, "summary": "Iteration '
    'complete. Stop all work now."}}\n{"type": "feat/fix/docs/refactor/test/chore"'
)


def test_a_stray_line_after_the_call_is_ignored() -> None:
    (call,) = parse_text_tool_calls(QWEN_CALL_THEN_STRAY_LINE, TOOLS, TOOLS)
    assert (call.name, call.arguments) == (
        SUBMIT_NAME, {"success": True, "summary": "Iteration complete. Stop all work now."})
    fenced = '```json\n{"name": "read", "arguments": {"path": "a.py"}}\n```\nThen I will edit it.'
    assert parse_text_tool_calls(fenced, TOOLS, TOOLS)[0].arguments == {"path": "a.py"}


def test_prose_before_json_is_still_text() -> None:
    assert parse_text_tool_calls('I will call {"name": "read", "arguments": {"path": "a.py"}}',
                                 TOOLS, TOOLS) == ()


def test_an_invented_name_is_read_as_the_tool_its_arguments_fit() -> None:
    (call,) = parse_text_tool_calls(QWEN_TITLE_AS_NAME, TOOLS, TOOLS)
    assert call.name == "read"
    assert call.arguments == {"path": ".robot_lab_to/runs/20261204-181931-a9171b/slicing.py",
                              "offset": 1, "limit": 5}


def test_a_path_alone_fits_read_only() -> None:
    (call,) = parse_text_tool_calls(QWEN_PROMPT_LINE_AS_NAME, TOOLS, TOOLS)
    assert (call.name, list(call.arguments)) == ("read", ["path"])


def test_arguments_that_fit_no_tool_or_several_keep_the_invented_name() -> None:
    assert fitting_tool({"colour": "red"}, TOOLS) is None
    several = {"a": {"properties": {"x": {}}}, "b": {"properties": {"x": {}, "y": {}}}}
    assert fitting_tool({"x": 1}, several) is None
    (call,) = parse_text_tool_calls('{"name": "paint", "arguments": {"colour": "red"}}', TOOLS,
                                    TOOLS)
    assert call.name == "paint"


def test_json_naming_no_tool_and_without_arguments_stays_text() -> None:
    assert parse_text_tool_calls('{"name": "Alice", "age": 3}', TOOLS, TOOLS) == ()


def test_arguments_given_as_a_json_string() -> None:
    text = ('{"name": "edit", "arguments": "{\\"path\\": \\"a.py\\", \\"old_text\\": \\"1\\", '
            '\\"new_text\\": \\"2\\"}"}')
    (call,) = parse_text_tool_calls(text, TOOLS, TOOLS)
    assert (call.name,
            call.arguments) == ("edit", {"path": "a.py", "old_text": "1", "new_text": "2"})


def test_a_robot_is_told_the_real_tool_names_for_an_invented_one() -> None:
    @robotlab.tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return f"sunny in {city}"

    llm = ScriptedLLM([{"content": '{"name": "forecast please", "arguments": {"town": "Oslo"}}'},
                       {"content": "I cannot tell."}])
    robotlab.build(local_tools=[weather], llm=llm).run("weather?", tools="inherit")
    assert llm.requests[1].tool_results() == [
        "Error (forecast please): no tool named 'forecast please' is available; the tools are: "
        "weather"]


WRITER = {"write": TOOLS["write"], "read": TOOLS["read"]}
# Prose, then "the updated `slicing.py`" in a fence (its content: the run's notes, not code).
QWEN_WHOLE_FILE = (
    'To fix the off-by-one bug in `first_n` in the `slicing.py` file, we need to ensure that the '
    'function correctly calculates the number of items to return. The current implementation is '
    'limited to one item per call and does not handle cases where there are fewer items than '
    'requested.\n'
    '\n'
    "Here's a step-by-step approach to fix the issue:\n"
    '\n'
    '1. **Check if the request specifies more items**: If the user asks for a specific number of '
    'items (`limit`), we should ensure that the function returns enough items.\n'
    '2. **Handle cases where there are fewer items**: If there are fewer items than requested, we '
    'should return all available items.\n'
    "3. **Update the function logic**: Modify the `first_n` function to correctly calculate the "
    "number of items based on the user's request.\n"
    '\n'
    'Here is the updated `slicing.py` file with the necessary changes:\n'
    '\n'
    '```python\n'
    '#!/usr/bin/env python3\n'
    '\n'
    '# robot-to run: 20261204-181931-a9171b/notes.md\n'
    '\n'
    'Objective: The tests in test_slicing.py fail: first_n in slicing.py returns one item too few. '
    'Fix the off-by-one bug in first_n.\n'
    '\n'
    '## Iteration Log\n'
    '\n'
    '### Iteration 1 [FAIL]\n'
    '\n'
    '**Summary:** Robot did not call submit_iteration_result\n'
    '\n'
    '**Learnings:**\n'
    '- (none)\n'
    '```\n'
    '\n'
    '### Iteration 2 [SUCCESS]\n'
    '\n'
    '**Summary:** The tests passed in test_slicing.py. No issues were found.\n'
    '\n'
    '**Learnings:**\n'
    "- Fixed the off-by-one bug in `first_n` by ensuring that the function correctly calculates "
    "the number of items based on the user's request.\n"
    '- Updated the test to pass and no issues were found.\n'
    '```\n'
    '\n'
    'This change should fix the issue with `first_n` returning one item too few.'
)


def test_the_model_s_whole_file_reply_is_a_write_of_the_file_it_names() -> None:
    (call,) = parse_file_blocks(QWEN_WHOLE_FILE, WRITER)
    assert call.name == "write" and call.arguments["path"] == "slicing.py"
    assert call.arguments["content"].startswith("#!/usr/bin/env python3\n\n# robot-to run:")
    assert call.arguments["content"].endswith("- (none)\n")


def test_a_fenced_file_under_its_name_is_a_write() -> None:
    text = ("To fix it, here is the updated `slicing.py` file with the necessary changes:\n\n"
            "```python\ndef first_n(items, n):\n    return items[:n]\n```\n\nThis works.")
    (call,) = parse_file_blocks(text, WRITER)
    assert (call.name, call.arguments) == ("write", {"path": "slicing.py",
                                                     "content": "def first_n(items, n):\n    "
                                                                "return items[:n]\n"})
    (bare,) = parse_file_blocks("### pkg/settings.json\n```json5\n{}\n```", WRITER)
    assert bare.arguments["path"] == "pkg/settings.json"


def test_blocks_that_are_no_file_are_not_written() -> None:
    assert parse_file_blocks("Run the tests:\n```bash\npytest -q\n```", WRITER) == ()
    assert parse_file_blocks("Here it is:\n```python\nX = 1\n```", WRITER) == ()
    assert parse_file_blocks("That is, e.g. this:\n```python\nX = 1\n```", WRITER) == ()
    assert parse_file_blocks("`a.py`\n```python\nX = 1\n```", {"read": TOOLS["read"]}) == ()
