"""``with:`` attachments (spec 4): images as data URLs, PDFs as files, text inline, URLs as
links."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

import robotlab
from robotlab import ConfigError
from robotlab.testing import ScriptedLLM, requests_seen, serve_script

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKm"
                       "MIQAAAABJRU5ErkJggg==")


def test_files_and_urls_become_content_parts_after_the_text(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    (tmp_path / "notes.md").write_text("# Notes\nbuy milk")
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4 tiny")
    llm = ScriptedLLM([{"content": "seen"}])
    robot = robotlab.build(llm=llm)
    robot.run("what is here?",
              with_=[tmp_path / "dot.png", str(tmp_path / "notes.md"), tmp_path / "doc.pdf",
                                      "https://example.org/cat.JPG"])
    [user] = [m for m in llm.requests[0].messages if m["role"] == "user"]
    text, image, notes, pdf, link = user["content"]
    assert text == {"type": "text", "text": "what is here?"}
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert notes == {"type": "text", "text": "--- notes.md ---\n# Notes\nbuy milk"}
    assert pdf["type"] == "file" and pdf["file"]["file_data"].startswith(
        "data:application/pdf;base64,")
    assert link == {"type": "image_url", "image_url": {"url": "https://example.org/cat.JPG"}}
    assert robot.messages[0]["content"] == user["content"]


def test_with_given_under_its_ruby_name_and_alone(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha")
    llm = ScriptedLLM([{"content": "ok"}, {"content": "ok"}])
    robot = robotlab.build(llm=llm)
    robot.run("read", **{"with": tmp_path / "a.txt"})
    robot.run("plain")
    assert llm.requests[0].last_user[1] == {"type": "text", "text": "--- a.txt ---\nalpha"}
    assert llm.requests[1].last_user == "plain"


@pytest.mark.parametrize(("given", "match"), [("missing.png", "cannot be read"),
                                              ("https://e.org/page.html", "only image"),
                                              ("blob.bin", "not an image, PDF or text"),
                                              (42, "file path")])
def test_unusable_attachments_are_config_errors_and_leave_the_conversation_alone(
        given: object, match: str) -> None:
    Path("blob.bin").write_bytes(b"\0\1")
    robot = robotlab.build(llm=ScriptedLLM([{"content": "never"}]))
    with pytest.raises(ConfigError, match=match):
        robot.run("look", with_=given)
    assert robot.messages == []


def test_an_image_reaches_an_openai_compatible_server_as_a_data_url(tmp_path: Path) -> None:
    (tmp_path / "dot.png").write_bytes(PNG)
    robotlab.configure(ruby_llm={"max_retries": 0, "request_timeout": 20})
    with serve_script([{"content": "a dot"}]) as url:
        reply = robotlab.build(model="openai/scripted",
                               api_base=url).run("describe", with_=tmp_path / "dot.png")
        [body] = requests_seen(url)
    assert reply.reply == "a dot"
    parts = body["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "describe"}
    assert parts[1]["image_url"]["url"].startswith("data:image/png;base64,")
