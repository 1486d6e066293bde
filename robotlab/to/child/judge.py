"""The prose judge's model call in a supervised child process.

A judge call can hang as long as any model call, so it runs the way the iteration's robot
runs: forked into its own process group, watched by the orchestrator, killed whole when the
iteration's deadline passes or a signal arrives. The reply and its token counts come back as
one JSON line; any failure comes back as a ``RemoteError`` naming the class that was raised
(``IterationTimeout`` and ``Interrupted`` when the orchestrator ended the call).
"""

from __future__ import annotations

import dataclasses
import socket

from robotlab.errors import RemoteError
from robotlab.process_groups import Supervisor
from robotlab.to.evals.prose import Judge, JudgeReply
from robotlab.to.process.failure import Failure
from robotlab.to.process.forked import ForkedChild, Watch, send_line


class SupervisedJudge:
    """A ``Judge`` whose every call runs ``inner`` in a supervised child process."""

    def __init__(self, inner: Judge, supervisor: Supervisor, watch: Watch) -> None:
        self.inner = inner
        self.supervisor = supervisor
        self.watch = watch

    def __call__(self, system: str, message: str) -> JudgeReply:
        """Ask the judge in a child; returns its reply with the tokens it used.

        Raises:
            RemoteError: the call failed, ran past the iteration's deadline or was stopped by
                a signal (``type_name`` is the class raised, or
                ``IterationTimeout``/``Interrupted``).
        """
        inner = self.inner

        def serve(sock: socket.socket) -> None:
            send_line(sock, {"ok": True, "reply": dataclasses.asdict(inner(system, message))})

        child = ForkedChild(self.supervisor, self.watch)
        child.start(serve)
        try:
            answer = child.receive()
        finally:
            child.close()
        if not answer.get("ok"):
            error = Failure.from_wire(answer.get("error"))
            raise RemoteError(error.error_class, error.message)
        return JudgeReply(**answer["reply"])
