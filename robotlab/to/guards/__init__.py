"""Guards: the grader lock (always on) and the small-model guardrails (``--local-guards``)."""

from __future__ import annotations

from robotlab.to.guards.chain import GuardChain, GuardSettings
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.guards.quality import QualityMonitor

__all__ = ["GraderLock", "GuardChain", "GuardSettings", "QualityMonitor"]
