"""The unscored eval: every claimed success passes."""

from __future__ import annotations

from robotlab.to.evals.score import Context, Eval, Score


class NullEval(Eval):
    """Always gate ok and improved; no value, no target."""

    def score(self, context: Context) -> Score:
        """``Score(True, True, False, None, "no eval configured")``."""
        return Score(gate_ok=True, improved=True, met_target=False, value=None,
                     detail="no eval configured")
