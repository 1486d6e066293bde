"""Evals: how a claimed success is scored (gate, improvement, target)."""

from __future__ import annotations

from robotlab.to.evals.code import CodeEval
from robotlab.to.evals.null import NullEval
from robotlab.to.evals.prose import JudgeReply, ProseEval
from robotlab.to.evals.registry import EvalRegistry, build
from robotlab.to.evals.score import Context, Eval, Score

__all__ = ["CodeEval", "Context", "Eval", "EvalRegistry", "JudgeReply", "NullEval", "ProseEval",
           "Score", "build"]
