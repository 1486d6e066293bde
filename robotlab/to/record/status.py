"""What a person watching sees on stderr: ``robot-to: <message>`` progress lines, and on a
terminal a live status line drawn with rich (iteration n/N, phase, what the robot is doing,
tokens, dollars, elapsed). ``quiet`` prints nothing at all (the summary still goes to stdout)."""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import time
from collections.abc import Iterator
from typing import Any, TextIO

from robotlab.to.record.summary import format_cost


@dataclasses.dataclass
class LiveState:
    """What the live line shows; ``cost`` None means the model has no price ("unknown")."""

    iteration: int = 0
    max_iterations: int | None = None
    phase: str = "starting"
    activity: str = ""
    tokens: int = 0
    cost: float | None = 0.0
    estimated: bool = False
    """True while a reply streams: tokens and dollars count its chunks, until the provider's
    usage."""
    wait_until: float | None = None
    """While the run waits (a retry's backoff): the ``time.monotonic()`` it ends, shown as a
    countdown."""
    decision_until: float | None = None
    """While the run waits for a blocking decision with ``--decision-timeout``: the Unix time it
    gives up (a wall clock, since people on the bus read it)."""
    decision_since: float | None = None
    """While the run waits for a blocking decision: the Unix time the wait began."""
    decision_from: str | None = None
    """Whom the run waits for: the person ``--ask`` names, or None (the decision files)."""

    def line(self, elapsed: int, now: float | None = None, wall: float | None = None) -> str:
        """The status line as text (an estimate starts with ``~``; a wait counts down to
        ``wait_until``; a decision's wait counts up, and down to ``decision_until``).

        ``now`` stands for ``time.monotonic()`` and ``wall`` for ``time.time()``.
        """
        of = f"/{self.max_iterations}" if self.max_iterations else ""
        about = "~" if self.estimated else ""
        phase = self.phase
        if self.wait_until is not None:
            left = max(0, math.ceil(self.wait_until - (time.monotonic() if now is None else now)))
            phase = f"{phase} in {left}s (Ctrl-C stops the run)"
        if self.decision_since is not None:
            phase = self._decision_wait(time.time() if wall is None else wall)
        parts = [f"iteration {self.iteration}{of}", phase,
                 *([self.activity] if self.activity else []),
                 f"{about}{self.tokens:,} tokens",
                 (about if self.cost is not None else "") + format_cost(self.cost),
                 f"{elapsed // 60}m {elapsed % 60:02d}s"]
        return " · ".join(parts)

    def _decision_wait(self, wall: float) -> str:
        """``awaiting alice's decision for 1m 03s, until 14:05:31 (3m 12s left)``."""
        whose = f"{self.decision_from}'s decision" if self.decision_from else "a decision"
        since = _clock(wall - (self.decision_since or wall))
        if self.decision_until is None:
            return f"awaiting {whose} for {since}, no deadline"
        by = time.strftime("%H:%M:%S", time.localtime(self.decision_until))
        return (f"awaiting {whose} for {since}, until {by} "
                f"({_clock(self.decision_until - wall)} left)")


def _clock(seconds: float) -> str:
    """Seconds as ``1m 03s`` (never below zero)."""
    whole = max(0, int(seconds))
    return f"{whole // 60}m {whole % 60:02d}s"


class Status:
    """Progress output; a live line only when ``stream`` is a terminal; nothing when ``quiet``."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None,
                 quiet: bool = False) -> None:
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live_enabled = not quiet and (self.stream.isatty() if live is None else live)
        self._live: Any = None
        self._console: Any = None
        self.started = time.monotonic()
        self.state = LiveState()

    def start(self) -> None:
        """Begin the live line (terminal only)."""
        if not self.live_enabled:
            return
        from rich.console import Console
        from rich.live import Live

        self._console = Console(file=self.stream)
        self._live = Live(self._render(), console=self._console, refresh_per_second=4,
                          transient=True, get_renderable=self._render)
        self._live.start()

    def _render(self) -> Any:
        from rich.text import Text

        return Text(self.state.line(int(time.monotonic() - self.started)), style="bold cyan")

    def say(self, message: str) -> None:
        """One progress line: ``robot-to: <message>``."""
        if self.quiet:
            return
        if self._console is not None:
            self._console.print(f"robot-to: {message}", markup=False, highlight=False)
        else:
            self.stream.write(f"robot-to: {message}\n")
            self.stream.flush()

    @contextlib.contextmanager
    def working(self, message: str) -> Iterator[None]:
        """A spinner with ``message`` while the block runs (a plain ``message…`` line off a
        terminal)."""
        if self.quiet:
            yield
            return
        if not self.live_enabled:
            self.say(f"{message}…")
            yield
            return
        from rich.console import Console

        with Console(file=self.stream).status(f"robot-to: {message}…", spinner="dots"):
            yield

    def update(self, **fields: Any) -> None:
        """Change what the live line shows (any ``LiveState`` field; ``phase`` clears ``activity``
        and ends a countdown unless it sets a new ``wait_until``)."""
        if "phase" in fields:
            fields.setdefault("activity", "")
            fields.setdefault("wait_until", None)
        self.state = dataclasses.replace(self.state, **fields)

    def stop(self) -> None:
        """Remove the live line."""
        if self._live is not None:
            self._live.stop()
            self._live = None
            self._console = None
