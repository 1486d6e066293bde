"""A program started as PID 1 (a container's first process) stays behind as its init.

PID 1 has a job no other process has: every orphan in its PID namespace becomes its child, and
only it can reap them. A robotd whose handler or tool leaves a grandchild running (``sh -c 'x
&'``, a daemonizing server) would collect a zombie for each, for as long as the container runs,
until no PID is left. PID 1 also gets no default action for a signal it has no handler for.

So, as ``tini`` and ``docker run --init`` do, the process forks first thing: the child, in a
process group of its own, runs the program; the parent reaps every child that ends, passes each
stop signal on to the program once, and exits with the program's exit code. Its own group is
what keeps a terminal's Ctrl-C from reaching the program twice (once from the terminal, once
passed on). Anywhere but PID 1 nothing happens: under ``tini``, ``docker run --init`` or systemd,
the program is not PID 1.
"""

from __future__ import annotations

import os
import signal
from typing import Final, NoReturn

PASSED_ON: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                    signal.SIGUSR2, signal.SIGWINCH)
"""Signals the init passes on to the program (SIGKILL and SIGSTOP cannot be caught)."""


def stay_as_init_if_pid1() -> None:
    """When this process is PID 1, fork: return in the child, which runs the program; the parent
    becomes the program's init and never returns. Call it before any thread starts."""
    if os.getpid() != 1:
        return
    program = os.fork()
    if program == 0:
        os.setpgid(0, 0)
        return
    try:
        os.setpgid(program, program)  # whichever of the two runs first
    except OSError:
        pass  # the child did it, or has already ended
    _serve(program)


def _serve(program: int) -> NoReturn:
    """Pass stop signals on to ``program`` and reap every child until it ends; exit as it did."""
    for signum in PASSED_ON:
        # nothing else runs in this process: a plain handler is safe here
        signal.signal(signum, lambda number, _frame: _pass_on(program, number))
    while True:
        try:
            pid, status = os.wait()  # an orphan's end, or the program's
        except ChildProcessError:  # no child left: the program's end was reaped already
            os._exit(0)
        if pid == program:
            code = os.waitstatus_to_exitcode(status)
            os._exit(code if code >= 0 else 128 - code)  # killed by a signal: a shell's code


def _pass_on(program: int, signum: int) -> None:
    try:
        os.kill(program, signum)
    except ProcessLookupError:
        pass  # it ended; the wait loop is about to see it
