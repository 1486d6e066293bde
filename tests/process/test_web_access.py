"""``robotlab web --access-key FILE``: the console answers only who shows its key, and with one it
may listen beyond loopback (as the broker may with keys). A real console over a real broker,
asked over HTTP as a script and in Debian's headless Chromium as a person."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from tests.process import test_web_browser as browser
from tests.process import test_web_processes as served

SECONDS, web_argv = served.SECONDS, served.web_argv
web = served.web  # the fixture that starts `robotlab web`
page = browser.page  # the fixture of a headless Chromium page

pytestmark = pytest.mark.process

KEY = "k3y-0f-the-console-4e1f9a"


@pytest.fixture
def key_file(tmp_path: Path) -> str:
    path = tmp_path / "web.key"
    path.write_text(KEY + "\n")
    return str(path)


def test_only_a_request_that_carries_the_key_is_answered(web, key_file: str) -> None:
    # Bound beyond loopback: allowed, since the key guards it (the test reaches it on loopback).
    url, _ = web("--bind", "0.0.0.0:0", "--access-key", key_file)
    local = url.replace("0.0.0.0", "127.0.0.1")
    for path in ("", "events", "api/view", "api/runs/echo"):
        refused = httpx.get(local + path, timeout=SECONDS)
        assert refused.status_code == 401, path
        assert refused.text.startswith("this console asks for its access key: open /?key=KEY")
    assert httpx.post(local + "api/dlq/dl-1/replay", timeout=SECONDS).status_code == 401
    wrong = httpx.get(local + "api/view", headers={"Authorization": "Bearer not-the-key"},
                      timeout=SECONDS)
    assert wrong.status_code == 401
    bearer = httpx.get(local + "api/view", headers={"Authorization": f"Bearer {KEY}"},
                       timeout=SECONDS)
    assert bearer.status_code == 200 and "members" in bearer.json()
    assert httpx.get(local, params={"key": "guess"}, timeout=SECONDS).status_code == 401
    opened = httpx.get(local, params={"key": KEY}, timeout=SECONDS)
    assert opened.status_code == 303 and opened.headers["location"] == "./"
    assert "httponly" in opened.headers["set-cookie"].lower()
    with httpx.Client(base_url=local, cookies=opened.cookies, timeout=SECONDS) as browser_like:
        assert "new EventSource(" in browser_like.get("").text
        assert browser_like.get("api/view").status_code == 200


@pytest.mark.parametrize(("content", "line"), [
    ("short\n", "is shorter than 16 characters"),
    (None, "cannot read the access key"),
])
def test_a_short_or_missing_key_is_refused_with_one_line(broker: str, tmp_path: Path,
                                                         content: str | None, line: str) -> None:
    path = tmp_path / "web.key"
    if content is not None:
        path.write_text(content)
    done = subprocess.run(web_argv(broker, "--bind", "0.0.0.0:0", "--access-key", str(path)),
                          capture_output=True, text=True, timeout=SECONDS)
    assert done.returncode == 78 and line in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_person_opens_the_page_once_with_its_key_and_it_stays_live(page, web, start_robotd,
                                                                     key_file: str) -> None:
    expect = browser.sync_api.expect
    url, _ = web("--access-key", key_file)
    page.goto(url)
    expect(page.locator("body")).to_contain_text("this console asks for its access key")
    page.goto(f"{url}?key={KEY}")
    assert "key=" not in page.url
    members = page.locator("#members tbody tr")
    expect(page.locator("#broker")).to_have_text("live: the broker answers")
    start_robotd("late")
    expect(members.filter(has_text="late")).to_have_count(1)
