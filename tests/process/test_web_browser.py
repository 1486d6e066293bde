"""``robotlab web`` in a real browser: Debian's headless Chromium driven by Playwright, asserting
what a person sees on the page (Playwright's own browser download is not used)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pytest
from playwright import sync_api

from robotlab import bus
from robotlab.errors import DeliveryFailed
from tests.process import test_web_processes as served
from tests.process.test_runs_processes import clock  # noqa: F401 (the fixture)

SECONDS = served.SECONDS
web = served.web  # the fixture that starts `robotlab web`

pytestmark = pytest.mark.process

CHROMIUM = shutil.which("chromium")


@pytest.fixture
def page() -> Iterator[object]:
    """A page of headless Chromium; its checks wait up to SECONDS for what they expect."""
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    sync_api.expect.set_options(timeout=SECONDS * 1000)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield browser.new_page()
        finally:
            browser.close()


def test_a_member_appears_on_the_page_when_its_robotd_starts(page, web, start_robotd) -> None:
    expect = sync_api.expect
    url, _ = web()
    page.goto(url)
    members = page.locator("#members tbody tr")
    expect(page.locator("#broker")).to_have_text("live: the broker answers")
    expect(members.filter(has_text="robotlab-web")).to_have_count(1)
    expect(members.filter(has_text="late")).to_have_count(0)
    late = start_robotd("late")
    row = members.filter(has_text="late")
    expect(row).to_have_count(1)
    expect(row.locator("td").nth(3)).to_have_text("ready")
    expect(row.locator("td").nth(9)).to_have_text(str(late.pid))


def test_the_messages_flowing_appear_without_a_click(page, web, start_robotd,
                                                    broker: str) -> None:
    expect = sync_api.expect
    start_robotd("echo")
    url, _ = web()
    page.goto(url)
    messages = page.locator("#messages tbody tr")
    expect(messages).to_have_text(["no messages routed since the broker started"])
    with bus.connect(broker, name="test-ask", timeout=5) as client:
        client.send_request("echo", "hello").reply(SECONDS)
    expect(messages).to_have_count(2)
    expect(messages.nth(1).locator("td")).to_have_text([re.compile(r"\d\d:\d\d:\d\d"),
                                                        "test-ask", "echo", "request",
                                                        re.compile(r"\d+")])
    expect(page.locator("#flow-note")).to_have_text(
        "the latest 2 of 2 routed since the broker started")


def test_a_dead_letter_is_replayed_by_a_click(page, web, start_robotd, broker: str) -> None:
    expect = sync_api.expect
    url, _ = web()
    with bus.connect(broker, name="test-send", timeout=5) as client, pytest.raises(DeliveryFailed):
        client.send("late", "early bird").wait(SECONDS)
    page.goto(url)
    letters = page.locator("#dlq tbody tr")
    expect(letters.filter(has_text="early bird")).to_have_count(1)
    expect(letters.filter(has_text="undeliverable")).to_have_count(1)
    start_robotd("late")
    expect(page.locator("#members tbody tr").filter(has_text="late")).to_have_count(1)
    letters.filter(has_text="early bird").get_by_role("button", name="Replay").click()
    expect(page.locator("#outcome")).to_contain_text("replayed: delivered to")
    expect(letters).to_have_text(["the dead-letter queue is empty"])


def test_a_robots_runs_show_its_prompt_tool_call_and_final_words(
        page, web, clock) -> None:  # noqa: F811
    expect = sync_api.expect
    url, _ = web()
    page.goto(url)
    clock_row = page.locator("#members tbody tr").filter(has_text="clock")
    clock_row.get_by_role("button", name="Runs").click()
    expect(page.locator("#runs-title")).to_have_text("Recent runs of clock")
    expect(page.locator("#runs-note")).to_have_text("clock has not run since its robotd started")
    clock()
    # No click: the page reads the runs again when the robot's heartbeat counts a new one.
    run = page.locator("#runs-list article")
    expect(run).to_have_count(1)
    expect(run.locator(".head")).to_contain_text(" · done · ")
    expect(run.locator(".head")).to_contain_text("80 in / 16 out · unknown")
    expect(run.locator(".words").first).to_have_text("What time is it in Oslo?")
    expect(run.locator("li.tool-call")).to_have_text('clock({"city": "Oslo"}) → 12:00 in Oslo')
    expect(run.locator(".reply .words")).to_have_text("It is 12:00 in Oslo.")


def test_a_robot_to_run_on_the_bus_shows_its_iteration_phase_and_cost(page, web,
                                                                      broker: str) -> None:
    # A member reporting what a robot-to run on the bus reports with its heartbeats
    # (robotlab/to/runner/on_the_bus.py: RunOnBus.stats).
    expect = sync_api.expect
    url, _ = web()
    page.goto(url)
    runs = page.locator("#runs tbody tr")
    expect(runs).to_have_text(["no robot-to run on the bus"])
    figures = {"iteration": "2/5", "phase": "verify", "tokens": 1234, "cost": 0.0421, "commits": 1,
               "status": "iteration 2/5 · verify"}
    with bus.connect(broker, name="run-7f3a", timeout=5) as client:
        client.stats.source = lambda: figures
        row = runs.filter(has_text="run-7f3a")
        expect(row).to_have_count(1)
        expect(row.locator("td")).to_have_text(["run-7f3a", "2/5", "verify", "1", "1,234",
                                                "$0.0421", "0", "none"])
        figures = {**figures, "iteration": "3/5", "phase": "think"}
        expect(row.locator("td").nth(1)).to_have_text("3/5")
    expect(runs).to_have_text(["no robot-to run on the bus"])
