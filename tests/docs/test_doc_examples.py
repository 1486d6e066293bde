"""Every Python and shell block of README.md and docs/ runs, or says why it cannot.

Each page's blocks run in order in one session (``session.py``) in a fresh folder, with the
venv's commands first on PATH, a home and state folder of their own, and the scripted model
(``robotlab.testing.serve_script``) behind the OpenAI provider, so no key and no network are
needed. Where a block names the default broker address, ``tcp://127.0.0.1:5555``, it runs
against the page's own address instead, so pages run side by side and never touch a broker
of the machine's; and a path under ``/tmp/`` is one under the session's own temporary folder.
``blocks.py`` describes the marks.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from robotlab.testing import serve_script
from tests.docs.blocks import ROOT, Block, Page, pages, read_page

DEFAULT_BROKER = "tcp://127.0.0.1:5555"
PAGE_TIMEOUT = 110
FILLER_TURNS = 400

RUN_PAGES = [p for p in pages() if read_page(p).runnable]


def test_every_block_is_run_or_marked_with_a_reason() -> None:
    problems = [problem for path in pages() for problem in read_page(path).problems]
    assert not problems, "fix these marks (see tests/docs/blocks.py):\n" + "\n".join(problems)


def test_a_mark_without_a_reason_or_a_block_is_reported(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- not-run: -->\n```bash\nfalse\n```\n\n<!-- not-run: why -->\nprose\n"
                    "<!-- doc-setup: nothing -->\n<!-- not-run: why -->\n")
    problems = read_page(page).problems
    assert [p.split(": ", 1)[1] for p in problems] == [
        "a not-run mark needs its reason", "unknown setup 'nothing'",
        "not-run mark with no block after it"]
    # the mark before prose is dropped by the prose: the block after it would run
    assert read_page(page).blocks[0].not_run == ""


@pytest.mark.parametrize("path", RUN_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUN_PAGES])
def test_the_page_runs(path: Path, tmp_path: Path, endpoint: str, start_broker) -> None:
    page = read_page(path)
    if "broker" in page.setups:
        start_broker(endpoint, "--no-journal")
    result = run_page(page, tmp_path, endpoint)
    assert result.returncode == 0, result.stdout[-6000:]


def test_the_runner_fails_on_a_failing_block(tmp_path: Path, endpoint: str) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n```bash\ntrue\nfalse\necho after\n```\n"
                    "```python\nprint(x)\nundefined_name\n```\n")
    shell_fails = run_page(read_page(page), tmp_path / "shell", endpoint)
    assert shell_fails.returncode == 1
    assert "bash: line 7 exited 1" in shell_fails.stdout and "after" not in shell_fails.stdout
    assert f"doc block failed: {page}:6" in shell_fails.stdout

    page.write_text(page.read_text().replace("false\n", ""))
    python_fails = run_page(read_page(page), tmp_path / "python", endpoint)
    assert python_fails.returncode == 1
    assert f'File "{page}", line 11' in python_fails.stdout
    assert "NameError: name 'undefined_name'" in python_fails.stdout


def run_page(page: Page, folder: Path, broker: str) -> subprocess.CompletedProcess[str]:
    """Run ``page``'s runnable blocks in a session in ``folder``; its output is stdout."""
    (folder / "work").mkdir(parents=True)
    # short: an ipc:// path under it must stay within about 100 bytes
    private_tmp = tempfile.mkdtemp(prefix="rl-doc-")
    try:
        blocks = [_as_json(block, broker, private_tmp) for block in page.runnable]
        return _run_session(page, blocks, folder, broker)
    finally:
        shutil.rmtree(private_tmp, ignore_errors=True)


def _run_session(page: Page, blocks: list[dict], folder: Path,
                 broker: str) -> subprocess.CompletedProcess[str]:
    (folder / "blocks.json").write_text(json.dumps(blocks))
    script = [*page.model_turns, *[{"content": "ok"}] * FILLER_TURNS]
    log = folder / "session.log"
    with serve_script(script) as url, open(log, "wb") as out:
        # output to a file, not a pipe: what a block leaves running would hold a pipe open
        session = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("session.py")),
             str(folder / "blocks.json")],
            cwd=folder / "work", env=_environment(folder, broker, url), stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)
        try:
            session.wait(PAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            out.write(f"\n(the page did not finish in {PAGE_TIMEOUT} s)\n".encode())
        finally:
            _end_group(session)
    output = log.read_text(errors="replace")
    return subprocess.CompletedProcess(session.args, session.returncode, output)


def _as_json(block: Block, broker: str, private_tmp: str) -> dict:
    source = block.source.replace("/tmp/", f"{private_tmp}/").replace(DEFAULT_BROKER, broker)
    return {"page": str(block.page), "line": block.line, "language": block.language,
            "source": source}


def _environment(folder: Path, broker: str, model_url: str) -> dict[str, str]:
    """The reader's environment: the venv's commands, a home of its own, the scripted model."""
    home = folder / "home"
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ROBOTLAB_", "ROBOT_LAB_", "OTEL_", "OPENAI_", "ANTHROPIC_"))
           and key != "STATE_DIRECTORY"}
    venv_bin = str(Path(sys.executable).parent)
    return {**env, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "DOC_STATE": str(folder / "shell-state.sh"),
            "PATH": os.pathsep.join([venv_bin, env.get("PATH", "")]), "ROBOT_LAB_BROKER": broker,
            "OPENAI_API_BASE": model_url, "OPENAI_API_KEY": "sk-scripted",
            # a robot that names no model gets the default one, made an OpenAI model here
            "ROBOT_LAB_RUBY_LLM__PROVIDER": "openai", "ROBOT_LAB_RUBY_LLM__MODEL": "gpt-4o-mini"}


def _end_group(session: subprocess.Popen) -> None:
    """SIGTERM the session's process group (what its blocks left running), SIGKILL what stays."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(session.pid, sig)
        except ProcessLookupError:
            break
        try:
            session.wait(5)
        except subprocess.TimeoutExpired:
            continue
    session.wait()
