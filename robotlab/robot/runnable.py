"""The Runnable protocol shared by ``Robot`` and ``Network``: a crew with a chief."""

from __future__ import annotations

from typing import Any

__all__ = ["Runnable"]


class Runnable:
    """Mixin: implementers define ``crew``; the rest follows.

    A robot's crew is ``[robot]``; a network's crew is its robots in pipeline order.
    """

    @property
    def crew(self) -> list[Any]:
        """The robots that do the work."""
        raise NotImplementedError

    @property
    def chief(self) -> Any:
        """The first member of the crew (None for an empty crew)."""
        crew = self.crew
        return crew[0] if crew else None

    @property
    def robot_count(self) -> int:
        """How many robots are in the crew."""
        return len(self.crew)

    def network(self) -> bool:
        """True for a network; False for a single robot."""
        return False

    def single(self) -> bool:
        """The opposite of ``network()``."""
        return not self.network()
