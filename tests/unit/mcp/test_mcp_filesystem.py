"""A robot uses the reference ``@modelcontextprotocol/server-filesystem`` over stdio: its tools
are discovered, a call reads a file in the allowed folder, and a path outside it is refused."""

from __future__ import annotations

from pathlib import Path

import robotlab
from robotlab.testing import ScriptedLLM


def test_a_robot_reads_a_file_through_the_filesystem_server(filesystem_js: str,
                                                            tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "notes.txt").write_text("ship on friday\n")
    (tmp_path / "secret.txt").write_text("do not read\n")
    server = {"name": "fs", "timeout": 30,
              "transport": {"type": "stdio", "command": "node",
                            "args": [filesystem_js, str(allowed)]}}
    llm = ScriptedLLM([
        {"tool_calls": [{"name": "read_text_file",
                         "arguments": {"path": str(allowed / "notes.txt")}}]},
        {"tool_calls": [{"name": "read_text_file",
                         "arguments": {"path": str(tmp_path / "secret.txt")}}]},
        {"content": "done"},
    ])
    robot = robotlab.build(mcp=[server], llm=llm)
    try:
        robot.run("What do the notes say?", mcp="inherit", tools="inherit")
        sources = {t.mcp for t in robot.mcp_tools}
    finally:
        robot.disconnect()
    assert "read_text_file" in llm.requests[0].tool_names
    assert sources == {"fs"}
    read, refused = llm.requests[2].tool_results()
    assert read == "ship on friday\n"
    assert refused.startswith("Error (read_text_file):") and "do not read" not in refused
