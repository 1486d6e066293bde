"""Setting a run up (fresh or resumed), running the loop, and ending it with a summary.

Exit codes: 0 when the run ended on one of its stop conditions, 1 when it aborted
(consecutive failures, a permanent or fatal error), 2 when it could not start (usage,
configuration, no commit, dirty tree), 130 after Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, TextIO

from robotlab.bus.config import check_name
from robotlab.errors import (
    ConfigError,
    PeerUnavailable,
    PermanentError,
    RunExit,
    SetupError,
    StopRun,
)
from robotlab.llm import is_priced
from robotlab.process_groups import Supervisor
from robotlab.signal_relay import SignalRelay
from robotlab.to import config
from robotlab.to.child.judge import SupervisedJudge
from robotlab.to.child.robot_factory import RobotModel, judge, load_model_client, warm_up
from robotlab.to.evals.registry import EvalRegistry, build
from robotlab.to.evals.score import Context
from robotlab.to.git import Git
from robotlab.to.process.forked import Watch
from robotlab.to.record import summary
from robotlab.to.record.decisions import DecisionStore
from robotlab.to.record.notes import Notes
from robotlab.to.record.run_log import JsonlLog, stderr_echo
from robotlab.to.record.status import Status
from robotlab.to.runner import empty_branch, preflight
from robotlab.to.runner.backoff import Backoff
from robotlab.to.runner.loop import run_loop
from robotlab.to.runner.on_the_bus import BusJudge, RunOnBus
from robotlab.to.runner.progress import command_reporter
from robotlab.to.runner.session import Session
from robotlab.to.runner.state import Run, branch_name, new_run_id

DEFAULT_JUDGE_TIMEOUT = 600.0
"""Seconds a served judge robot may take to answer when no --iteration-timeout is set."""
NO_COMMITS = ("No commits found. robot-to requires at least one commit. "
              "Run: git commit --allow-empty -m 'initial'")


@dataclasses.dataclass
class RunReport:
    """How a run ended."""

    exit_code: int
    reason: str | None
    run: Run | None = None
    summary: str = ""


@dataclasses.dataclass
class Streams:
    """Where the summary (stdout) and progress lines (stderr) go, and in what form.

    ``live``: draw the live view (None: when ``err`` is a terminal); ``summary_json``: the
    summary as one JSON object; ``quiet``: no progress at all, only the summary.
    """

    out: TextIO = dataclasses.field(default_factory=lambda: sys.stdout)
    err: TextIO = dataclasses.field(default_factory=lambda: sys.stderr)
    live: bool | None = None
    summary_json: bool = False
    quiet: bool = False


def _repository(work_dir: str | os.PathLike[str] | None) -> Git:
    git = Git(work_dir or os.getcwd())
    root = git.toplevel()
    if root is None:
        raise SetupError("not a git repository (run robot-to inside one)")
    git = Git(root)
    if not git.head_exists():
        raise SetupError(NO_COMMITS)
    dirty = git.dirty_files()
    if dirty:
        more = f" (and {len(dirty) - 20} more)" if len(dirty) > 20 else ""
        shown = ", ".join(dirty[:20]) + more
        raise SetupError(f"the working tree has uncommitted changes: {shown}. Commit or stash "
                         "them first.")
    return git


def _prepare(settings: config.RobotToSettings, status: Status) -> None:
    """Load the model client and check the model before anything is created, under a spinner."""
    if settings.edit_format == "whole" and not settings.verify_command:
        raise ConfigError("--edit-format whole needs --verify-command: the verify command judges "
                          "every reply")
    with status.working("loading the model client"):
        load_model_client()
    preflight.check_cost_limit(settings)
    if settings.preflight:
        with status.working(f"checking {settings.model} (preflight: credentials and one call)"):
            preflight.check(settings)
    warm_up()


def _session(git: Git, run: Run, settings: config.RobotToSettings, registry: EvalRegistry,
             status: Status) -> Session:
    supervisor, watch = Supervisor(), Watch()
    the_judge: Any = SupervisedJudge(judge(RobotModel.judging(settings)), supervisor, watch)
    closers = []
    if settings.crew and not settings.broker:
        raise ConfigError("--crew needs the bus: pass --broker URL (or set ROBOT_LAB_BROKER)")
    if settings.ask and not settings.broker:
        raise ConfigError("--ask needs the bus: pass --broker URL (or set ROBOT_LAB_BROKER)")
    if settings.ask:
        check_name(settings.ask, "--ask")
    if settings.judge_robot:
        if not settings.broker:
            raise ConfigError("--judge-robot needs the bus: pass --broker URL "
                              "(or set ROBOT_LAB_BROKER)")
        the_judge = BusJudge(settings.broker, settings.judge_robot, f"{run.run_id}.judge",
                             settings.iteration_timeout or DEFAULT_JUDGE_TIMEOUT)
        closers.append(the_judge.close)
    evaluator = build(settings, registry, the_judge, supervisor)
    return Session(
        run=run, settings=settings, root=git.work_dir, git=git,
        log=JsonlLog(stderr_echo(settings.debug)),
        notes=Notes(Path(git.work_dir) / run.notes_path), evaluator=evaluator,
        backoff=Backoff(settings.backoff_base),
        decisions=DecisionStore(Path(git.work_dir) / run.decisions_path),
        supervisor=supervisor, status=status, lock_patterns=list(settings.protect_paths),
        watch=watch, closers=closers,
        model_answered=settings.preflight,  # the preflight's call answered
    )


def start(objective: str, settings: config.RobotToSettings, registry: EvalRegistry,
          streams: Streams, work_dir: str | None = None) -> Session:
    """Check the repository, create the branch and the run directory; return the session."""
    git = _repository(work_dir)
    status = Status(streams.err, streams.live, streams.quiet)
    _prepare(settings, status)
    now = dt.datetime.now()
    run_id = new_run_id(now)
    run = Run(run_id, objective, branch_name(objective, now), git.head_sha(),
              f"{settings.run_dir}/runs/{run_id}", start_branch=git.current_branch(),
              settings=settings.persisted())
    _price_unknown_unless_priced(run, settings)
    session = _session(git, run, settings, registry, status)
    if git.branch_exists(run.branch):  # two runs of one objective within a second
        run.branch = f"{run.branch}-{run_id[-6:]}"
    git.create_branch(run.branch)
    try:
        _open_run(session)
    except BaseException:
        # Ctrl-C or a failing baseline before the loop: leave no empty branch behind.
        empty_branch.leave_if_empty(session)
        raise
    session.log.event("orchestrator:start", run_id=run_id, objective=objective, branch=run.branch,
                      model=settings.model)
    session.status.say(f"run {run_id} → branch {run.branch}")
    return session


def _open_run(session: Session) -> None:
    """The run's directory, log, notes and baseline score, on its fresh branch."""
    run, root = session.run, Path(session.git.work_dir)
    session.git.add_to_local_exclude(session.settings.run_dir)
    (root / run.run_dir).mkdir(parents=True, exist_ok=True)
    session.log.open(root / run.log_path)
    session.notes.write_header(run.run_id, run.objective)
    session.decisions.directory.mkdir(parents=True, exist_ok=True)
    _baseline(session)
    session.save()


def _price_unknown_unless_priced(run: Run, settings: config.RobotToSettings) -> None:
    """An unpriced model's spending is unknown from the start, not $0 until its first call
    succeeds."""
    if not is_priced(settings.model_settings.required_id()):
        run.cost_usd = None


def _baseline(session: Session) -> None:
    measure = getattr(session.evaluator, "baseline", None)
    if measure is None:
        return
    value = measure(Context(session.root, session.run.base_commit, None, session.run.objective, 0,
                            on_command=command_reporter(session)))
    if value is not None:
        session.run.record_score(value)
        session.log.event("eval:baseline", value=value)
        session.status.say(f"base score: {value}")


def reopen(run_id: str, overrides: dict[str, Any], registry: EvalRegistry, streams: Streams,
           work_dir: str | None = None) -> Session:
    """Check out a paused run's branch and restore its state and settings."""
    git = _repository(work_dir)
    run_dir = config.load(overrides).run_dir
    path = Path(git.work_dir) / run_dir / "runs" / run_id / "run.json"
    if not path.is_file():
        raise SetupError(f"no resumable run at {path}")
    run = Run.load(path)
    settings = config.load(overrides, base=run.settings)
    status = Status(streams.err, streams.live, streams.quiet)
    _prepare(settings, status)
    run.settings = settings.persisted()
    _price_unknown_unless_priced(run, settings)
    session = _session(git, run, settings, registry, status)
    empty_branch.restore(session)
    session.log.open(Path(git.work_dir) / run.log_path)
    session.log.event("orchestrator:resume", run_id=run_id, iteration=run.iteration,
                      branch=run.branch, model=settings.model)
    session.status.say(f"resumed run {run_id} at iteration {run.iteration} → branch {run.branch}")
    return session


def _install_signals(session: Session) -> SignalRelay | None:
    """SIGINT and SIGTERM stop the run and kill what runs now (from the main thread only: the
    Python API may run a loop on any thread, and only the main thread can take signals)."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def stop(signum: int) -> None:
        session.request_stop(signal.Signals(signum).name)
        session.supervisor.kill_all()

    return SignalRelay(stop, (signal.SIGINT, signal.SIGTERM)).install()


def _join_bus(session: Session) -> RunOnBus | None:
    """Join the crew when ``--broker`` (or ROBOT_LAB_BROKER) names one."""
    url = session.settings.broker
    if not url:
        return None
    try:
        membership = RunOnBus(session, url).start()
    except PeerUnavailable as exc:
        raise PermanentError(f"cannot join the bus at {url} ({exc}): start the broker, or drop "
                             "--broker") from exc
    session.ask_crew = membership.ask
    if session.settings.ask:
        session.ask_human = membership.ask_human
    session.status.say(f"on the bus at {url} as {membership.name}: "
                       f"robotlab send --to {membership.name} status --wait")
    return membership


def execute(session: Session, streams: Streams) -> RunReport:
    """Run the loop, turn how it ended into a reason and an exit code, print the summary."""
    relay = _install_signals(session)
    session.status.update(iteration=session.run.iteration,
                          max_iterations=session.settings.max_iterations,
                          tokens=session.run.total_tokens, cost=session.run.cost_usd)
    warm_up()
    session.status.start()
    reason, code = None, int(RunExit.STOPPED)
    membership: RunOnBus | None = None
    try:
        membership = _join_bus(session)
        run_loop(session)
    except StopRun as exc:
        reason, code = exc.reason, exc.exit_code
        session.log.event("orchestrator:abort", reason=reason)
    except PermanentError as exc:
        reason, code = f"permanent error: {exc}", int(RunExit.ABORTED)
        session.git.reset_hard() if session.commit_failure is None else None
        session.log.event("orchestrator:abort", reason=reason, permanent=True)
    except Exception as exc:  # the run's one boundary: any other error ends it as fatal
        reason, code = f"fatal: {exc}", int(RunExit.ABORTED)
        session.rollback()
        session.log.event("orchestrator:fatal", error=type(exc).__name__, message=str(exc))
    finally:
        if membership is not None:
            membership.close()
        session.status.stop()
        if relay is not None:
            relay.restore()
    if session.signal_name and (reason is None or not reason.startswith("awaiting")):
        reason, code = f"interrupted by {session.signal_name}", int(RunExit.INTERRUPTED)
    return finish(session, reason, code, streams)


def finish(session: Session, reason: str | None, code: int, streams: Streams) -> RunReport:
    """Log the end, save ``run.json``, print the summary to stdout."""
    run = session.run
    elapsed = (dt.datetime.now().astimezone() - run.started()).total_seconds()
    returned_to = empty_branch.leave_if_empty(session)
    session.log.event("orchestrator:end", iterations=run.iteration, commits=run.commits,
                      input_tokens=run.input_tokens, output_tokens=run.output_tokens,
                      tokens_estimated=run.tokens_estimated,
                      cost_usd="unknown" if run.cost_usd is None else round(run.cost_usd, 6),
                      abort_reason=reason, elapsed=round(elapsed, 1))
    for close in session.closers:
        close()
    session.log.close()
    session.save()
    ins, dels, files = session.git.diff_stat(run.base_commit)
    facts = summary.SummaryFacts(
        model=session.settings.model, elapsed=elapsed, reason=reason, branch=run.branch,
        run_id=run.run_id, run_dir=run.run_dir, base_commit=run.base_commit,
        iterations=run.iteration, commits=run.commits,
        rolled_back=run.rolled_back, no_change=run.no_change,
        input_tokens=run.input_tokens, output_tokens=run.output_tokens, cost_usd=run.cost_usd,
        insertions=ins, deletions=dels,
        files=files, returned_to=returned_to, resumable=not summary.is_complete(reason),
        truncated_replies=run.truncated_replies, max_output_tokens=run.cut_at,
        tokens_estimated=run.tokens_estimated,
    )
    text = summary.as_json(facts, code) if streams.summary_json else summary.render(facts)
    streams.out.write(text)
    streams.out.flush()
    return RunReport(code, reason, run, text)


def setup_failure(exc: Exception, streams: Streams) -> RunReport:
    """A run that never started: ``robot-to: <reason>`` on stderr, exit 2."""
    streams.err.write(f"robot-to: {exc}\n")
    streams.err.flush()
    return RunReport(int(RunExit.CANNOT_START), str(exc))


def interrupted_setup(streams: Streams) -> RunReport:
    """Ctrl-C before the loop began (a preflight or a baseline in progress): exit 130, and a new
    run's branch is not left behind."""
    reason = "interrupted before the first iteration began: nothing was committed"
    streams.err.write(f"\nrobot-to: {reason}\n")
    streams.err.flush()
    return RunReport(int(RunExit.INTERRUPTED), reason)


SETUP_ERRORS = (SetupError, ConfigError, PermanentError)
