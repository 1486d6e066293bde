"""Process groups killed whole (with every descendant's group), and the set of those alive."""

from __future__ import annotations

from robotlab.process_groups.kill import GRACE_SECONDS, kill_tree
from robotlab.process_groups.supervisor import Supervisor

__all__ = ["GRACE_SECONDS", "Supervisor", "kill_tree"]
