"""An iteration's robot in its own child process, supervised by the orchestrator.

The child (``forked.ForkedChild``) builds the iteration's robot and then serves commands,
one JSON object per line: ``{"cmd": "run", "message": ...}`` answered by an attempt report,
``{"cmd": "exit"}``. The same robot (same chat, same guard state) serves the first run, the
nudges and the repairs. On a timeout or a signal the orchestrator kills the child's whole
process group, and its descendants' groups.
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from typing import Any

from robotlab.errors import BudgetExceeded, InferenceError
from robotlab.ipc import json_lines
from robotlab.process_groups import Supervisor
from robotlab.to.child.file_replies import read_reply
from robotlab.to.child.robot_factory import (
    Oversight,
    RobotModel,
    attempt_temperature,
    build_robot,
    compact,
    metered_llm,
    run_robot,
)
from robotlab.to.child.token_meter import MeteredLLM, add_cost
from robotlab.to.guards.chain import GuardChain, GuardSettings
from robotlab.to.guards.grader_lock import GraderLock
from robotlab.to.process.failure import Cause, Failure, describe_error
from robotlab.to.process.forked import ForkedChild, Watch, send_line
from robotlab.to.tools import files, submit, toolset

REPLY_LIMIT = 2000
"""Characters of the model's last reply kept in ``run.log``."""
CONTINUE_AFTER_COMPACTION = (
    "The conversation no longer fit the model's context window, so older messages were "
    "summarised or dropped. Continue the task from where you are."
)


@dataclasses.dataclass(frozen=True)
class ChildPlan:
    """Everything the child needs to build its robot."""

    name: str
    system_prompt: str
    model: RobotModel
    guard: GuardSettings
    lock_patterns: list[str]
    decisions: bool
    token_budget: int | None = None
    crew: tuple[str, ...] = ()
    edit_format: str = "tools"
    """``tools``: the robot edits through tool calls; ``whole``: it has no tools, each run starts
    a fresh conversation, and the files its reply writes in fenced blocks are written for it."""


@dataclasses.dataclass
class AttemptReport:
    """What one robot run in the child produced.

    ``budget_stop`` is set when the run's token or cost budget ended the attempt (not an error);
    ``quality`` holds the quality monitor's warnings (reasons below their limits); ``cost``
    is the attempt's dollars, None when the model has no price; ``estimated`` says the token
    counts are partly estimates (the provider reported no usage for some call); ``last_reply``
    the model's last text, clipped to ``REPLY_LIMIT`` characters. With the whole-file edit
    format ``written`` lists the files the reply wrote, ``refused`` the guards' refusals and
    ``unchanged`` the files it repeated as they were.
    """

    ok: bool
    input_tokens: int = 0
    output_tokens: int = 0
    result: dict[str, Any] | None = None
    decisions: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    error: Failure | None = None
    budget_stop: bool = False
    quality: list[str] = dataclasses.field(default_factory=list)
    cost: float | None = 0.0
    estimated: bool = False
    last_reply: str | None = None
    written: list[str] = dataclasses.field(default_factory=list)
    refused: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)

    def to_wire(self) -> dict[str, Any]:
        """The report as one JSON-ready dict (the failure as plain data)."""
        data = dataclasses.asdict(self)
        data["error"] = self.error.to_wire() if self.error else None
        return data

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> AttemptReport:
        """Read ``to_wire``'s dict, or a failure reply of the forked child (``ok`` false,
        ``error``)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        values = {key: value for key, value in data.items() if key in fields}
        values["error"] = Failure.from_wire(data["error"]) if data.get("error") else None
        return cls(**values)


def _attempt(robot: Any, command: dict[str, Any], capture: submit.Capture,
             oversight: Oversight) -> AttemptReport:
    meter = oversight.meter
    meter.start(command.get("budget"), command.get("cost_budget"))
    oversight.last_reply = None
    report = _run_once(robot, command["message"], meter)
    if report.error is not None and report.error.cause == Cause.CONTEXT_WINDOW:
        # Sending the same overflowing request again cannot help. When model calls of this
        # attempt came before the overflow, the conversation grew in it: compact, and go on
        # once from a short message. When the attempt's first request overflowed, nothing can
        # shrink: the attempt ends with the cause.
        grew = meter.input_tokens > 0
        before, after = compact(robot)
        oversight.tell({"event": "context:compacted", "messages_before": before,
                        "messages_after": after, "retried": grew})
        if grew:
            report = _run_once(robot, CONTINUE_AFTER_COMPACTION, meter)
    report.input_tokens, report.output_tokens = meter.input_tokens, meter.output_tokens
    report.cost = meter.cost
    report.estimated = meter.estimated
    report.result = dataclasses.asdict(capture.result) if capture.result else None
    report.decisions, capture.decisions = capture.decisions, []
    report.quality = oversight.monitor.drain()
    report.last_reply = clip(oversight.last_reply)
    return report


def _write_blocks(reply: str | None, shown: dict[str, str], output: str, chain: GuardChain,
                  report: AttemptReport) -> None:
    """Write the files ``reply`` holds in fenced blocks (whole-file edit format), behind the
    guards (the grader lock refuses a locked file): ``report.written``, ``report.refused`` and
    ``report.unchanged``."""
    write = chain.wrap("write", files.write)
    blocks, report.unchanged = read_reply(reply, shown, [output] if output else [])
    for block in blocks:
        outcome = write({"path": block.path, "content": block.content})
        if outcome.startswith("Wrote"):
            report.written.append(block.path)
        else:
            report.refused.append(outcome.strip().splitlines()[0][:200])


def _run_once(robot: Any, message: str, meter: MeteredLLM) -> AttemptReport:
    try:
        run_robot(robot, message)
        return AttemptReport(True)
    except (BudgetExceeded, InferenceError) as exc:
        # Refused by the meter, or the core's own check after a run that crossed the budget.
        return AttemptReport(True, budget_stop=True) if meter.exhausted else AttemptReport(
            False, error=describe_error(exc))
    except Exception as exc:  # every failure crosses to the orchestrator as data
        return AttemptReport(False, error=describe_error(exc))


def clip(text: str | None, limit: int = REPLY_LIMIT) -> str | None:
    """``text`` cut to ``limit`` characters (with a marker saying how much was cut)."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def _tell_parent(sock: socket.socket) -> Callable[[dict[str, Any]], None]:
    """Events the parent shows and logs while an attempt runs: tool calls, usage, model retries."""

    def tell(event: dict[str, Any]) -> None:
        send_line(sock, event)

    return tell


def _asker(sock: socket.socket, commands: json_lines.LineReader) -> Callable[[str, str], str]:
    """``ask_crew``'s way out: the orchestrator asks over the bus and sends back one line."""

    def ask(robot: str, question: str) -> str:
        send_line(sock, {"event": "crew:ask", "robot": robot, "question": question})
        answer = commands.next() or {}
        if "answer" not in answer:
            raise RuntimeError(str(answer.get("error") or "no answer"))
        return str(answer["answer"])

    return ask


def _serve(plan: ChildPlan, sock: socket.socket) -> None:
    capture = submit.Capture()
    commands = json_lines.LineReader(sock)
    chain = GuardChain(plan.guard, GraderLock(plan.guard.root, plan.lock_patterns))
    whole, heated = plan.edit_format == "whole", False
    specs = [] if whole else toolset(capture, chain, plan.decisions, plan.guard.local_guards,
                                     Supervisor(), list(plan.crew), _asker(sock, commands))
    tell = _tell_parent(sock)
    meter = metered_llm(plan.model.request_timeout, tell)
    meter.on_usage = lambda: tell({"event": "usage", "input_tokens": meter.input_tokens,
                                   "output_tokens": meter.output_tokens, "cost": meter.cost,
                                   "estimated": meter.estimated})
    meter.on_streaming = lambda chunks, cost: tell({
        "event": "model:streaming", "chunks": chunks, "input_tokens": meter.input_tokens,
        "output_tokens": meter.output_tokens + chunks, "cost": add_cost(meter.cost, cost)})
    oversight = Oversight(chain.monitor, lambda: capture.result is not None, meter,
                          plan.token_budget, tell=tell)
    chain.observer = tell
    robot = build_robot(plan.name, plan.system_prompt, plan.model, specs,
                        on_content=lambda _chunk: None, oversight=oversight)
    while True:
        try:
            command = commands.next()
        except EOFError:
            return
        if command is None or command.get("cmd") != "run":
            return
        if whole:
            robot.conversation.clear()  # each whole-file request stands alone
            heated = _sample(robot, plan.model, int(command.get("hotter") or 0), heated)
        report = _attempt(robot, command, capture, oversight)
        if whole and report.error is None:
            _write_blocks(oversight.last_reply, command.get("files") or {},
                          str(command.get("output") or ""), chain, report)
        send_line(sock, report.to_wire())


def _sample(robot: Any, model: RobotModel, hotter: int, heated: bool) -> bool:
    """Set the attempt's temperature ``hotter`` steps up, or back after a hotter one (a robot
    never heated keeps the request as the library builds it); whether it is now heated."""
    if hotter or heated:
        temperature = attempt_temperature(model, hotter)
        if temperature is not None:
            robot.with_temperature(temperature)
    return bool(hotter)


class RobotChild:
    """The parent's handle on one iteration's child process."""

    def __init__(self, plan: ChildPlan, supervisor: Supervisor, watch: Watch) -> None:
        self.plan = plan
        self._child = ForkedChild(supervisor, watch)

    @property
    def pid(self) -> int | None:
        """The child's process id while it runs."""
        return self._child.pid

    def start(self) -> None:
        """Fork the child (its own process group)."""
        plan = self.plan
        self._child.start(lambda sock: _serve(plan, sock))

    def run(self, message: str, budget: int | None = None, cost_budget: float | None = None,
            on_event: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
            shown: dict[str, str] | None = None, hotter: int = 0,
            output: str = "") -> AttemptReport:
        """Ask the robot to run ``message`` using at most ``budget`` tokens and ``cost_budget``
        dollars (None: no limit); progress events (tool calls, usage) go to ``on_event``.
        ``shown``: the files (path to text) the message showed, which a whole-file reply rewrites;
        ``hotter``: how many steps above the robot's temperature a whole-file attempt samples;
        ``output``: the verify output the message showed (a block copying it is no file).

        Ends early on the deadline or a stop request.
        """
        command = {"cmd": "run", "message": message, "budget": budget, "cost_budget": cost_budget,
                   "files": shown or {}, "hotter": hotter,
                   "output": output}
        return AttemptReport.from_wire(self._child.request(command, on_event))

    def kill(self) -> None:
        """Kill the child's process group and its descendants' groups, then reap it."""
        self._child.kill()

    def close(self) -> None:
        """Tell the child to exit, reap it (killing it if it lingers) and forget it."""
        self._child.close()
