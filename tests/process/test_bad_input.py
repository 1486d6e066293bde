"""Bad input to the real commands: one line naming the fix and the exit code docs/errors.md gives.

Each test runs the installed entry points as processes (``python -m ...``), as a user would.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from robotlab import bus
from tests.process.conftest import Processes, live
from tests.waiting import wait_until

pytestmark = pytest.mark.process

ROBOTD = str(Path(sys.executable).with_name("robotd"))
"""The installed command, so its messages start ``robotd:`` as a user sees them."""
USAGE = 64
INTERRUPTED = 130


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=60)


def error_lines(text: str) -> list[str]:
    """The lines of ``text`` that say what went wrong (click adds a usage line and a hint)."""
    return [line for line in text.splitlines() if line.startswith("Error:")]


@pytest.mark.parametrize("name", ["", "a b"])
def test_robotd_refuses_a_name_no_one_could_address(broker: str, name: str) -> None:
    done = run("robotlab.robotd", "--name", name, "--broker", broker, "--handler", "handlers:echo",
               "--connect-timeout", "5")
    assert done.returncode == USAGE, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = error_lines(done.stderr)
    assert "--name" in line and "robot name" in line and "'alice'" in line, line
    assert live(broker, name) == []


@pytest.mark.parametrize("to", ["", "two words", "a,b"])
def test_send_to_a_name_no_robot_can_have_is_a_usage_error(broker: str, to: str) -> None:
    done = run("robotlab.cli", "send", "--to", to, "--broker", broker, "hi")
    assert done.returncode == USAGE, done.stderr
    (line,) = error_lines(done.stderr)
    assert "--to" in line and "robot name" in line, line


def test_an_unknown_option_exits_64_as_the_docs_say() -> None:
    done = run("robotlab.cli", "send", "--nope", "--to", "bob", "hi")
    assert done.returncode == USAGE, done.stderr
    (line,) = error_lines(done.stderr)
    assert "--nope" in line, line


# Seconds sloth takes to reply: the Ctrl-C must reach `send` before the reply does, and on a
# loaded machine the signal can take over a second to be sent and handled.
REPLY_AFTER = 6


def test_ctrl_c_on_send_wait_exits_130_and_the_late_reply_is_no_dead_letter(
        broker: str, start_robotd, processes: Processes, tmp_path: Path) -> None:
    start_robotd("sloth", "handlers:slow")
    started = tmp_path / "started"
    send = processes.start([sys.executable, "-m", "robotlab.cli", "send", "--to", "sloth",
                            "--broker", broker, "--wait", f"{REPLY_AFTER}:{started}"], name="send")
    wait_until(started.exists, timeout=30, message="the robot has the request")
    send.popen.send_signal(signal.SIGINT)
    assert send.popen.wait(30) == INTERRUPTED, send.output()
    (line,) = send.output().strip().splitlines()
    assert line.startswith("robotlab: interrupted; message ") and "to sloth was sent" in line, line
    assert "the broker drops it (no dead letter)" in line, line
    # The reply comes REPLY_AFTER s after the request reached sloth; held, it would be a dead
    # letter once the broker's hold (1 s here) ran out.
    wait_until(lambda: stats(broker)["replies_dropped"] == 1, timeout=15,
               message="the reply dropped")
    with bus.connect(broker, name="test-dlq", timeout=2) as client:
        assert client.admin("dlq.list") == []


def stats(broker: str) -> dict:
    with bus.connect(broker, name="test-stats", timeout=2) as client:
        return client.admin("stats")


def test_a_mistyped_setting_is_one_line_per_field_and_exit_78(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    settings = tmp_path / "config" / "robot_lab.yml"
    settings.write_text("max_iterations: many\nruby_llm:\n  temperature: hot\n")
    done = subprocess.run([ROBOTD, "--name", "x", "--system-prompt", "hi",
                           "--broker", f"ipc://{tmp_path}/none.sock", "--connect-timeout", "1"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 78, done.stderr
    told = [line for line in done.stderr.splitlines() if str(settings) in line]
    assert told == [f"robotd: {settings}: max_iterations: got 'many'; expected a whole number",
                    f"{settings}: ruby_llm.temperature: got 'hot'; expected a number"], done.stderr
    assert "Traceback" not in done.stderr and "validation error" not in done.stderr


def test_a_broken_template_is_one_line_naming_its_file_and_line(tmp_path: Path) -> None:
    template = tmp_path / "broken.md"
    template.write_text("---\ndescription: x\n---\nYou are {{ role }.\n")
    done = subprocess.run([ROBOTD, "--name", "x", "--template", str(template),
                           "--broker", f"ipc://{tmp_path}/none.sock", "--connect-timeout", "1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 78, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if str(template) in line]
    assert line.startswith(
        f"robotd: template {template}: {template}, line 4: unexpected '}}'"), line


def test_robot_to_with_an_unknown_provider_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for argv in (["init", "-q"],
                 ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
                  "-m", "start"]):
        subprocess.run(["git", *argv], cwd=tmp_path, check=True)
    done = subprocess.run([str(Path(sys.executable).with_name("robot-to")), "--provider", "nope",
                           "do a thing"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Provider List" not in done.stdout + done.stderr and "\x1b[1;31m" not in done.stdout
    told = [line for line in (done.stdout + done.stderr).splitlines() if "nope" in line]
    assert told == ["robot-to: unknown provider 'nope': known ones include anthropic, gemini, "
                    "groq, ollama, openai, openrouter (all of them: "
                    "https://docs.litellm.ai/docs/providers)"], done.stdout + done.stderr
