"""A person at ``robotlab human``, driven by a test: it types into her stdin and reads her
screen."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

from tests.waiting import wait_until


class Person:
    """A ``robotlab human`` process whose stdin the test types into and whose output it reads."""

    def __init__(self, broker: str, name: str, log: Path) -> None:
        self.log = log
        with open(log, "ab") as out:
            argv = [sys.executable, "-m", "robotlab.cli", "human", "--name", name, "--broker",
                    broker]
            self.popen = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out,
                                          stderr=subprocess.STDOUT, text=True)
        self.sees("is on the bus")

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def sees(self, text: str, timeout: float = 30) -> str:
        """The first line of her screen holding ``text``, once it is there."""
        def line() -> str | None:
            return next((shown for shown in self.output().splitlines() if text in shown), None)
        return str(wait_until(line, timeout=timeout,
                              message=f"{text!r} on her screen:\n{self.output()}"))

    def types(self, line: str) -> None:
        assert self.popen.stdin is not None
        self.popen.stdin.write(line + "\n")
        self.popen.stdin.flush()

    def leaves(self) -> int:
        self.types("quit")
        code = self.popen.wait(30)
        self._close_stdin()
        return code

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.wait(30)
        self._close_stdin()

    def _close_stdin(self) -> None:
        # Left to the collector, the pipe was closed (and warned about as unclosed) in whatever
        # test ran next in this worker: the unit tier counts that as that test's failure.
        if self.popen.stdin is not None:
            with contextlib.suppress(OSError):  # she has gone: what was buffered cannot go
                self.popen.stdin.close()
