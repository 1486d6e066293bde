"""robot-to against mini-swe-agent on the real-model task suite (bench/tasks/), local model.

Per task, interleaved (the agent that goes first alternates task by task), each agent gets a
fresh git repository of the task's files:

- robot-to: the ``robot-to`` CLI from the project's venv as a subprocess, ``--local-guards
  --no-stream``, the task's verify command as its gate, ``--max-iterations 3 --max-verify-repairs
  4`` (up to 15 model calls, as mini-swe-agent's 15 steps), and a target (``--measure`` prints 1
  once verify passes, ``--target 1``) so a run ends at its first verified commit, ``--edit-format
  whole`` (``--edit-format tools`` to compare), and the task's tests locked (``--protect-path
  test_*.py``), as a user gating on their tests would. Solved: it committed and verify passes on the
  tree it leaves.
- mini-swe-agent (PyPI ``mini-swe-agent``, in a venv of its own under
  ``~/.cache/robotlab/mini-swe-agent/``, made on first use): bench/mini_swe_run.py, its
  ``DefaultAgent`` with the bash-only text-based model, ``--step-limit`` steps, no cost
  tracking. Solved: verify passes on its working tree.

For both, a tree whose ``test_*.py`` files differ from the task's is never solved (the ending
says which tests changed).

Both reach the model through a recording proxy (bench/recording_proxy.py): tokens are the
server's own ``usage`` summed over every call an agent made (robot-to's preflight included),
and every exchange is kept in ``--keep DIR`` when given. Each agent run is bounded by
``--task-timeout`` seconds of wall time (robot-to gets SIGTERM, then its group SIGKILL), and
every reply by ``--max-output-tokens`` (both agents); before the next run starts, the server
finishes any reply a killed run left in flight (not counted in anyone's wall time). Every
run is reported; ``--write`` appends the table to docs/benchmarks.md.

Usage::

    .venv/bin/python bench/robot_to_real.py --api-base http://127.0.0.1:PORT/v1 [--write]
        [--tasks off_by_one,rename] [--agents robot-to,mini-swe-agent] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_tasks  # noqa: E402  (bench/real_tasks.py: the suite)
import recording_proxy  # noqa: E402  (bench/recording_proxy.py: the token counts and transcripts)
from real_table import Result, append_section, commit_of, render  # noqa: E402  (the table)

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = ROOT / ".venv" / "bin"
MINI_VERSION = "2.4.6"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
MINI_HOME = CACHE / "robotlab" / "mini-swe-agent"
AGENTS = ("robot-to", "mini-swe-agent")


def agent_env(home: Path) -> dict[str, str]:
    """The environment of both agents: the project's venv first on PATH (so a verify command's
    ``python`` has pytest, without the project's plugins: the tasks need none and loading them
    takes seconds), no user settings of either agent, quiet start-ups."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("ROBOT_LAB_TO_", "MSWEA_", "OPENAI_"))}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
               XDG_CONFIG_HOME=str(home / "config"), OPENAI_API_KEY="none",
               MSWEA_GLOBAL_CONFIG_DIR=str(home / "mini-config"),
               MSWEA_SILENT_STARTUP="1", MSWEA_CONFIGURED="true",
               MSWEA_COST_TRACKING="ignore_errors", ROBOT_LAB_TO_BACKOFF_BASE="5",
               PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def mini_python() -> Path:
    """mini-swe-agent's interpreter, installing the pinned release into its own venv once."""
    python = MINI_HOME / "venv" / "bin" / "python"
    if not python.exists():
        print(f"installing mini-swe-agent {MINI_VERSION} into {MINI_HOME / 'venv'}...",
              file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(MINI_HOME / "venv")], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet",
                        f"mini-swe-agent=={MINI_VERSION}"], check=True)
    return python


def _bounded(argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[str, bool]:
    """Run ``argv`` in its own process group for at most ``timeout`` s: stdout, and whether it
    was stopped (SIGTERM to the process, which lets robot-to roll back and summarise; then
    SIGKILL to the group)."""
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               start_new_session=True)
    try:
        return process.communicate(timeout=timeout)[0], False
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        try:
            return process.communicate(timeout=30)[0], True
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            return process.communicate()[0], True


def _last_json(text: str) -> dict[str, Any]:
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            try:
                return dict(json.loads(line))
            except ValueError:
                continue
    return {}


def run_robot_to(task: real_tasks.Task, repo: Path, url: str, args: argparse.Namespace,
                 env: dict[str, str]) -> dict[str, Any]:
    """One robot-to run; its --json summary (empty when it printed none)."""
    measure = f"({task.verify}) >/dev/null 2>&1 && echo 1 || echo 0"
    argv = [str(VENV_BIN / "robot-to"), task.objective, "--provider", "openai", "--model",
            args.model, "--api-base", url, "--local-guards", "--no-stream", "--no-decisions",
            "--json", "--quiet",
            "--verify-command", task.verify, "--measure", measure, "--target", "1",
            "--max-iterations", str(args.max_iterations), "--max-verify-repairs",
            str(args.max_verify_repairs), "--iteration-timeout", str(args.task_timeout),
            "--max-output-tokens", str(args.max_output_tokens), "--edit-format", args.edit_format,
            "--protect-path", real_tasks.GRADER_GLOB]
    out, stopped = _bounded(argv, repo, env, args.task_timeout)
    summary = _last_json(out)
    summary["stopped"] = stopped
    return summary


def run_mini(task: real_tasks.Task, repo: Path, url: str, args: argparse.Namespace,
             env: dict[str, str], trajectory: Path) -> dict[str, Any]:
    """One mini-swe-agent run; the driver's JSON line (empty when it printed none)."""
    argv = [str(mini_python()), str(ROOT / "bench" / "mini_swe_run.py"), "--repo", str(repo),
            "--task", task.objective, "--model", f"openai/{args.model}", "--api-base", url,
            "--step-limit",
            str(args.step_limit), "--wall-limit", str(int(args.task_timeout)), "--max-tokens",
            str(args.max_output_tokens), "--trajectory", str(trajectory)]
    out, stopped = _bounded(argv, repo, env, args.task_timeout + 60)
    summary = _last_json(out)
    summary["stopped"] = stopped
    return summary


def _commits(repo: Path) -> int:
    """Commits on the checked-out branch after the task's own."""
    count = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True,
                           text=True)
    return max(int(count.stdout.strip() or 1) - 1, 0)


def one_run(agent: str, task: real_tasks.Task, work: Path, args: argparse.Namespace) -> Result:
    """Materialise the task, run ``agent`` on it through a recording proxy, and judge the tree."""
    repo = real_tasks.materialize(task, work / agent / task.name)
    record = work / agent / f"{task.name}.calls.jsonl"
    env = agent_env(work / agent / "home")
    with recording_proxy.recording(args.api_base, record) as url:
        started = time.monotonic()
        if agent == "robot-to":
            summary = run_robot_to(task, repo, url, args, env)
        else:
            summary = run_mini(task, repo, url, args, env, work / agent / f"{task.name}.traj.json")
        seconds = time.monotonic() - started  # not the wait for a killed run's last reply
    calls, prompt, completion = recording_proxy.usage(record)
    verdict = real_tasks.verify(task, repo, env)
    tampered = real_tasks.changed_graders(task, repo)
    fair = verdict.passed and not tampered
    if agent == "robot-to":
        committed = _commits(repo) > 0
        return Result(task.name, agent, committed and fair, int(summary.get("iterations") or 0),
                      calls, prompt, completion, seconds,
                      _ending(_robot_to_ending(summary), tampered))
    status = str(summary.get("exit_status") or "no result")
    return Result(task.name, agent, fair, int(summary.get("steps") or 0), calls, prompt, completion,
                  seconds, _ending("stopped at the wall limit" if summary["stopped"] else status,
                                   tampered))


def _ending(ended: str, tampered: list[str]) -> str:
    """How a run ended, saying when it changed the task's tests (never counted as solved)."""
    return f"{ended}; changed the tests ({', '.join(tampered)})" if tampered else ended


def _robot_to_ending(summary: dict[str, Any]) -> str:
    reason = str(summary.get("reason")
                 or ("no summary" if not summary.get("stopped") else "stopped"))
    return f"{reason} (wall limit)" if summary["stopped"] else reason


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-base", required=True,
                        help="the model server, http://127.0.0.1:PORT/v1")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct")
    parser.add_argument("--tasks", help="comma-separated task names (default: all)")
    parser.add_argument("--agents", default=",".join(AGENTS),
                        help="comma-separated, of: " + ", ".join(AGENTS))
    parser.add_argument("--max-iterations", type=int, default=3, help="robot-to's --max-iterations")
    parser.add_argument("--max-verify-repairs", type=int, default=4,
                        help="robot-to's --max-verify-repairs (default 4: with 3 iterations, 15 "
                             "attempts, mini-swe-agent's 15 steps)")
    parser.add_argument("--edit-format", default="whole", choices=("whole", "tools"),
                        help="robot-to's --edit-format")
    parser.add_argument("--max-output-tokens", type=int, default=512,
                        help="longest reply, for both agents")
    parser.add_argument("--step-limit", type=int, default=15, help="mini-swe-agent's step limit")
    parser.add_argument("--task-timeout", type=float, default=300.0,
                        help="wall seconds per agent run")
    parser.add_argument("--keep", help="keep every repository and model exchange under this folder")
    parser.add_argument("--write", action="store_true",
                        help="append the table to docs/benchmarks.md")
    args = parser.parse_args()
    agents = [name.strip() for name in args.agents.split(",") if name.strip()]
    if set(agents) - set(AGENTS):
        parser.error(f"--agents: choose from {', '.join(AGENTS)}")
    tasks = real_tasks.load_tasks(args.tasks.split(",") if args.tasks else None)
    load_before, commit = os.getloadavg()[0], commit_of(ROOT)
    with tempfile.TemporaryDirectory(prefix="robot-to-real-") as scratch:
        work = Path(args.keep) if args.keep else Path(scratch)
        results = []
        for index, task in enumerate(tasks):
            for agent in agents if index % 2 == 0 else agents[::-1]:
                result = one_run(agent, task, work, args)
                print(json.dumps(result.__dict__), file=sys.stderr, flush=True)
                results.append(result)
    table = render(results, agents)
    print(table)
    if args.write:
        append_section(ROOT, shown_command(sys.argv[1:]), table, commit, load_before,
                       os.getloadavg()[0])


def shown_command(argv: list[str]) -> str:
    """The command line as recorded in the docs: ``--keep``'s folder (a path of this machine) left
    out."""
    shown, skip = ["bench/robot_to_real.py"], False
    for arg in argv:
        if skip or arg.startswith("--keep="):
            skip = False
            continue
        skip = arg == "--keep"
        if not skip:
            shown.append(arg)
    return " ".join(shown)


if __name__ == "__main__":
    main()
