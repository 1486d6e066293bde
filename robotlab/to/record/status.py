"""What a person watching sees on stderr: ``robot-to: <message>`` progress lines, and on a
terminal a live status line (iteration, phase, tokens, elapsed) drawn with rich."""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO


class Status:
    """Progress output; a live line only when ``stream`` is a terminal."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live_enabled = self.stream.isatty() if live is None else live
        self._live: Any = None
        self._console: Any = None
        self.started = time.monotonic()
        self.iteration = 0
        self.phase_name = "starting"
        self.tokens = 0

    def start(self) -> None:
        """Begin the live line (terminal only)."""
        if not self.live_enabled:
            return
        from rich.console import Console
        from rich.live import Live

        self._console = Console(file=self.stream)
        self._live = Live(self._render(), console=self._console, refresh_per_second=4, transient=True,
                          get_renderable=self._render)
        self._live.start()

    def _render(self) -> Any:
        from rich.text import Text

        elapsed = int(time.monotonic() - self.started)
        return Text(
            f"iteration {self.iteration} · {self.phase_name} · {self.tokens:,} tokens · "
            f"{elapsed // 60}m {elapsed % 60:02d}s",
            style="bold cyan",
        )

    def say(self, message: str) -> None:
        """One progress line: ``robot-to: <message>``."""
        if self._console is not None:
            self._console.print(f"robot-to: {message}", markup=False, highlight=False)
        else:
            self.stream.write(f"robot-to: {message}\n")
            self.stream.flush()

    def update(self, iteration: int | None = None, phase: str | None = None, tokens: int | None = None) -> None:
        """Change what the live line shows."""
        self.iteration = self.iteration if iteration is None else iteration
        self.phase_name = self.phase_name if phase is None else phase
        self.tokens = self.tokens if tokens is None else tokens

    def stop(self) -> None:
        """Remove the live line."""
        if self._live is not None:
            self._live.stop()
            self._live = None
            self._console = None
