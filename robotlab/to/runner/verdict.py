"""An iteration's verdict: the eval of the working tree, and what its outcome is."""

from __future__ import annotations

from robotlab.to.child.token_meter import price
from robotlab.to.evals.score import Context, Score
from robotlab.to.runner.outcome_types import Outcome, OutcomeKind
from robotlab.to.runner.progress import command_reporter
from robotlab.to.runner.session import Session
from robotlab.to.tools.submit import IterationResult

NO_SUBMIT = "no submit; verify passed"


def evaluate(session: Session) -> Score:
    """Score the working tree against HEAD and log the ``eval`` event."""
    session.status.update(phase="eval")
    run = session.run
    # --require-improvement means "beat the best committed score", not only the parent's (which
    # may be lower after a commit made with --no-require-improvement).
    previous = (run.best_score_value if session.settings.require_improvement
                else run.last_score_value)
    context = Context(session.root, session.git.head_sha(), previous, run.objective, run.iteration,
                      on_command=command_reporter(session))
    score = session.evaluator.score(context)
    if not isinstance(score, Score):
        raise TypeError(f"eval returned {type(score).__name__}, not Score")
    session.add_usage(score.input_tokens, score.output_tokens, judge_cost(session, score))
    session.log.event("eval", iteration=run.iteration, gate=score.gate_ok, improved=score.improved,
                      value=score.value, met_target=score.met_target, detail=score.detail,
                      judge_reply=score.reply)
    return score


def judge_cost(session: Session, score: Score) -> float | None:
    """The dollars of the eval's model call (a prose judge), at the judge model's price."""
    if not score.input_tokens and not score.output_tokens:
        return 0.0
    model = session.settings.judge_model_settings.required_id()
    return price(model, score.input_tokens, score.output_tokens)


def unsubmitted_result(session: Session, summary: str = NO_SUBMIT) -> IterationResult:
    """The result of an iteration that never submitted and whose changes passed the gate."""
    files = session.git.changed_vs_worktree("HEAD")
    session.log.event("iteration:no_submit", iteration=session.run.iteration, detail=summary,
                      files=files)
    session.status.say(f"iteration {session.run.iteration}: {summary}")
    return IterationResult(success=True, summary=summary, key_changes=files)


def classify(session: Session, result: IterationResult, score: Score) -> Outcome:
    if not score.gate_ok:
        return Outcome(OutcomeKind.GATE_FAILURE, result, score)
    if not score.improved and session.settings.require_improvement:
        return Outcome(OutcomeKind.NO_IMPROVEMENT, result, score)
    return Outcome(OutcomeKind.COMMIT, result, score)
