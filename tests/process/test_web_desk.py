"""``robotlab web --human alice``: the console joins the bus as a person too, and her desk is on
the page: real broker, real console process, read and answered over HTTP as the page does, and
in Debian's headless Chromium as a person does."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import httpx
import pytest

from robotlab import bus
from robotlab.robot.human import ask_human
from tests.process import test_web_browser as browser
from tests.process import test_web_processes as served
from tests.process.conftest import stop
from tests.waiting import wait_until

SECONDS, view, web_argv = served.SECONDS, served.view, served.web_argv
web = served.web  # the fixture that starts `robotlab web`
page = browser.page  # the fixture of a headless Chromium page

pytestmark = pytest.mark.process


@pytest.fixture
def ops(broker: str) -> Iterator[bus.BusClient]:
    """The member that asks her."""
    with bus.connect(broker, name="ops", timeout=5) as client:
        yield client


def open_questions(url: str) -> list[dict]:
    return view(url)["desk"]["open"]


def desk_lines(url: str) -> list[str]:
    return [shown["line"] for shown in view(url)["desk"]["lines"]]


def test_her_question_is_on_the_desk_and_her_answer_from_the_page_is_the_reply(
        web, ops: bus.BusClient) -> None:
    url, _ = web("--human", "alice")
    assert [(row["name"], row["role"]) for row in view(url)["members"]
            if row["name"] == "alice"] == [("alice", "human")]
    answer = ask_human(ops, "alice", "Deploy now?", timeout=SECONDS, default="no")
    [asked] = wait_until(lambda: open_questions(url), timeout=SECONDS,
                         message="the question on her desk")
    assert (asked["number"], asked["from"], asked["question"], asked["default"]) == (
        1, "ops", "Deploy now?", "no")
    assert isinstance(asked["until"], float)
    sent = httpx.post(url + "api/desk/answer", json={"number": 1, "text": "yes, go"},
                      timeout=SECONDS)
    assert sent.status_code == 200 and sent.json() == {"ok": True, "said": "answered [1] to ops"}
    assert answer.result(SECONDS) == "yes, go"
    assert open_questions(url) == []
    again = httpx.post(url + "api/desk/answer", json={"number": 1, "text": "twice"},
                       timeout=SECONDS)
    assert again.status_code == 409 and again.json()["said"] == "no open question 1: type list"
    bad = httpx.post(url + "api/desk/answer", json={"text": ""}, timeout=SECONDS)
    assert bad.status_code == 409 and "your answer" in bad.json()["said"]


def test_unasked_messages_are_shown_and_unanswered_the_asker_gets_its_default(
        web, ops: bus.BusClient) -> None:
    url, _ = web("--human", "alice")
    ops.send("alice", "the nightly build is green").wait(SECONDS)
    wait_until(lambda: any("ops says" in line and "the nightly build is green" in line
                           for line in desk_lines(url)),
               timeout=SECONDS, message="the unasked message among her lines")
    assert ask_human(ops, "alice", "Roll back?", timeout=2, default="no").result(SECONDS) == "no"
    # Too late: whether the question reached her desk in its two seconds or not, nothing is sent.
    late = httpx.post(url + "api/desk/answer", json={"text": "yes"}, timeout=SECONDS)
    assert late.status_code == 409 and not late.json()["ok"]


def test_what_is_asked_while_her_console_is_down_is_on_her_desk_when_it_is_back(
        web, ops: bus.BusClient) -> None:
    _, first = web("--human", "alice")
    assert stop(first) == 0, first.output()
    # Given the broker has seen her, a question asked while she is away is held for her
    answer = ask_human(ops, "alice", "Still there?", timeout=SECONDS, default="no")
    url, _ = web("--human", "alice")
    [asked] = wait_until(lambda: open_questions(url), timeout=SECONDS,
                         message="the held question on her desk")
    assert asked["question"] == "Still there?"
    httpx.post(url + "api/desk/answer", json={"number": asked["number"], "text": "back now"},
               timeout=SECONDS)
    assert answer.result(SECONDS) == "back now"


def test_without_a_desk_an_answer_is_refused_and_her_name_must_be_her_own(web,
                                                                           broker: str) -> None:
    url, _ = web()
    assert "desk" not in view(url)
    refused = httpx.post(url + "api/desk/answer", json={"text": "yes"}, timeout=SECONDS)
    assert refused.status_code == 409 and "--human NAME" in refused.json()["said"]
    for argv, line in ((["--human", "robotlab-web"], "is the console's own --name"),
                       (["--human", "a b"], "--human")):
        done = subprocess.run(web_argv(broker, *argv), capture_output=True, text=True,
                              timeout=SECONDS)
        assert done.returncode == 64 and line in done.stderr, done.stderr


def test_she_answers_a_question_on_the_page(page, web, ops: bus.BusClient) -> None:
    expect = browser.sync_api.expect
    url, _ = web("--human", "alice")
    page.goto(url)
    expect(page.locator("#desk-title")).to_have_text("alice's desk")
    expect(page.locator("#desk-open")).to_have_text("no open questions")
    answer = ask_human(ops, "alice", "Deploy the release now?", timeout=SECONDS, default="no")
    asked = page.locator("#desk-open article")
    expect(asked.locator(".asks")).to_have_text(
        "[1] ops asks (default: no): Deploy the release now?")
    expect(asked.locator(".until")).to_contain_text("answer by ")
    expect(asked.locator(".until")).to_contain_text("left)")
    page.get_by_label("Answer to [1]").fill("yes, go ahead")
    asked.get_by_role("button", name="Answer").click()
    expect(page.locator("#desk-outcome")).to_have_text("answered [1] to ops")
    assert answer.result(SECONDS) == "yes, go ahead"
    expect(page.locator("#desk-open")).to_have_text("no open questions")
    expect(page.locator("#desk-lines li").first).to_contain_text("answered [1] to ops")
