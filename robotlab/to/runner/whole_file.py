"""The whole-file edit format (``--edit-format whole``), for models too small to call tools.

Each attempt is one question and its answer, with no tools and no earlier turns: the project's
files (locked grader files first, marked as not to be written), what the verify command says
of them now, and the objective, last. The files the reply
writes in fenced blocks are written for the robot (``child.file_replies``, behind the same
guards: a locked grader file is refused), and the verify command judges them. An iteration
makes up to 1 + ``max_verify_repairs`` attempts, each seeing the tree the one before left, and
commits at the first that passes ("whole-file reply; verify passed"); otherwise it ends as a
gate failure and is rolled back. There is no submit call, no notes and no decision tool in
this format: the verify command's verdict is the iteration's result.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path, PurePosixPath

from robotlab.to.child.robot import AttemptReport
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.process.command import run_command
from robotlab.to.process.failure import describe_error
from robotlab.to.runner import prompt
from robotlab.to.runner.attempts import Attempts, ended
from robotlab.to.runner.outcome_types import Outcome, OutcomeKind
from robotlab.to.runner.session import Session
from robotlab.to.runner.verdict import classify, evaluate, unsubmitted_result
from robotlab.to.tools.submit import IterationResult

SYSTEM_PROMPT = "You are a careful programmer. You fix code by rewriting whole files."
ACCEPTED = "whole-file reply; verify passed"
LOCKED_MARK = " (locked: it checks your change; do not write it)"
OUTPUT_CHARS = 1500
"""The end of the verify command's output shown to the model (where a test runner's summary is)."""


def request(objective: str, files: dict[str, str], verify_command: str, output: str | None,
            locked: Collection[str] = (), last: str = "") -> str:
    """One attempt's message: the files (``locked`` ones first, marked as not to be changed),
    the verify command's output (None: it passes), what the last reply did wrong (``last``,
    from ``after_reply``), the task."""
    order = sorted(files, key=lambda name: name not in locked)
    shown = "\n\n".join(
        f"{name}{LOCKED_MARK if name in locked else ''}\n```\n{files[name].rstrip()}\n```"
        for name in order)
    if output is None:
        state = f"`{verify_command}` passes."
    elif not output.strip():
        state = f"`{verify_command}` fails, printing nothing."
    else:
        state = f"`{verify_command}` fails with:\n```\n{output.strip()[-OUTPUT_CHARS:]}\n```"
    last = f"{last}\n\n" if last else ""
    return (f"The project's files:\n\n{shown}\n\n{state}\n\n{last}Task: {objective}\n\n"
            "Write each file you change: its name on one line, then its whole new content in a "
            "``` block.")


def after_reply(report: AttemptReport) -> str:
    """What the next attempt is told about a reply that changed nothing: the files it repeated
    unchanged, the locked ones it tried to write, or that it wrote none ("" when it wrote one)."""
    if report.written:
        return ""
    said = []
    if report.unchanged:
        said.append(f"Your last reply repeated {', '.join(report.unchanged)} unchanged, which "
                    "fixes nothing.")
    if report.refused:
        said.append("Your last reply tried to write a locked file, which is refused.")
    if not said:
        said.append("Your last reply had no file in a ``` block.")
    return " ".join([*said, "Write the file that needs the fix, with the fix in it."])


def shown_files(session: Session, output: str | None) -> dict[str, str]:
    """The files an attempt shows: a small project whole (``prompt.small_project``), else the
    files the objective or the verify output name, up to the same size."""
    files = session.git.tracked_files()
    texts = prompt.small_project(session.root, files)
    if texts:
        return texts
    mentioned = f"{session.run.objective}\n{output or ''}"
    named = [name for name in files if name in mentioned or PurePosixPath(name).name in mentioned]
    shown: dict[str, str] = {}
    for name in named:
        try:
            text = (Path(session.root) / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if sum(map(len, shown.values())) + len(text) <= prompt.SMALL_PROJECT_CHARS:
            shown[name] = text
    return shown


def _verify_now(session: Session) -> str | None:
    """The verify command's output on the tree as it is; None when it passes."""
    settings = session.settings
    result = run_command(str(settings.verify_command), session.root, settings.verify_timeout,
                         session.supervisor)
    return None if result.passed else result.output


def run_attempts(session: Session, attempts: Attempts, lock: GraderLock,
                 before: dict[str, str | None]) -> Outcome:
    """Ask, write, verify, up to 1 + ``max_verify_repairs`` times; the iteration's outcome."""
    settings, iteration = session.settings, session.run.iteration
    tries = settings.max_verify_repairs + 1
    output, score, last, hotter = _verify_now(session), None, "", 0
    for attempt in range(1, tries + 1):
        if not attempts.budget_left():
            break
        files = shown_files(session, output)
        locked = {name for name in files if lock.locks(str(Path(session.root) / name))}
        message = request(session.run.objective, files, str(settings.verify_command), output,
                          locked, last)
        report = attempts.run(message, files, hotter, (output or "").strip()[-OUTPUT_CHARS:])
        over = ended(report, attempts)
        if over:
            return over
        tampered = lock.changed(before)
        if tampered:
            return Outcome(OutcomeKind.TAMPERED, IterationResult.missing(), tampered=tampered)
        session.log.event("whole_file:reply", iteration=iteration, attempt=attempt,
                          written=report.written, refused=report.refused,
                          unchanged=report.unchanged, hotter=hotter)
        # A reply that changed nothing is said so to the next attempt, which samples hotter: at
        # the same temperature a small model mostly repeats the same answer.
        last, hotter = after_reply(report), 0 if report.written else hotter + 1
        if not report.written:
            session.status.say(f"iteration {iteration}: the reply wrote no file "
                               f"({attempt}/{tries})")
            continue
        try:
            score = evaluate(session)
        except Exception as exc:  # an eval failure takes the same retry path as a robot error
            return Outcome(OutcomeKind.ERROR, IterationResult.missing(), error=describe_error(exc))
        if session.stopping:
            return Outcome(OutcomeKind.INTERRUPTED, IterationResult.missing(), score)
        if score.gate_ok:
            return classify(session, unsubmitted_result(session, ACCEPTED), score)
        session.status.say(f"iteration {iteration}: {', '.join(report.written)} did not pass "
                           f"verification ({score.detail}) ({attempt}/{tries})")
        output = score.output
    if score is None:
        return Outcome(OutcomeKind.FAILURE,
                       IterationResult(False, f"no reply wrote a file in {tries} attempts"))
    return Outcome(OutcomeKind.GATE_FAILURE,
                   IterationResult(False, "no reply passed verification"), score)
