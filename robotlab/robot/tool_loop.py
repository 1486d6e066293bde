"""The tool loop of one run: ask the model, run the tools it asks for, repeat until it answers.

Usage and cost are summed over every round trip. The circuit breaker (``max_tool_rounds``, else
the global ``max_tool_iterations``) raises ``ToolLoopError`` before the extra tool runs;
doom-loop detection only warns the model inside the tool result. A tool failure becomes
``Error (<name>): <message>`` for the model, unless the tool has ``raise_on_error``.

Every step goes into the robot's ``HistoryLog`` as it happens (the reply with its tool calls,
then each tool result), and each request is rendered from that log.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from robotlab.errors import ToolError, ToolLoopError, retryable
from robotlab.history.log import HistoryLog, ReplyEntry, TaskEntry, ToolCallEntry, ToolResultEntry
from robotlab.hooks.hooks import HookScope, ToolCallHookContext
from robotlab.llm import LLM, ChunkCallback, LLMReply, ToolCall, Usage, is_priced
from robotlab.observability import spans, tracing
from robotlab.robot.doom_loop import DoomLoopDetector, annotate
from robotlab.robot.structured import RETRY_PROMPT, StructuredOutput, invalid_twice
from robotlab.robot.text_tool_calls import parse_file_blocks, parse_text_tool_calls
from robotlab.tools import effects
from robotlab.tools.tool import Tool

__all__ = ["LoopOutcome", "ToolLoop", "chain_callbacks", "reply_entries", "tool_error_text",
           "truncation_warning"]

log = logging.getLogger("robotlab.tool")
robot_log = logging.getLogger("robotlab.robot")


def tool_error_text(name: str, error: BaseException) -> str:
    """What the model reads when a tool fails: ``Error (<name>): <msg>[ (retryable)]``."""
    suffix = " (retryable)" if retryable(error) else ""
    return f"Error ({name}): {error}{suffix}"


def truncation_warning(robot: str, limit: int | None, written: int | None = None) -> str:
    """The one line logged when a reply was cut (``finish_reason`` ``length``) after ``written``
    tokens (None: unknown), with what to do: raise the limit, or, cut under it, make room in the
    context window."""
    if limit and written is not None and written < limit:
        return (f"robot {robot}: a reply was cut after {written} tokens, under max_tokens={limit} "
                "(finish_reason 'length'): the model's context window was full; shorten the "
                "conversation (clear_messages, compress_history) or give the model a larger window")
    where = f"at max_tokens={limit}" if limit else "at the provider's own output limit"
    return (f"robot {robot}: a reply was cut {where} (finish_reason 'length'); raise the limit "
            "with max_tokens=N (robotd --max-tokens N, or chat.with_params.max_tokens for every "
            "robot), 0 for no cap")


held_cuts: ContextVar[list[tuple[int | None, int | None]] | None] = ContextVar(
    "held_cuts", default=None)
"""Where this thread's runs put the cuts they would warn of ((max_tokens, tokens written)), for
a caller that decides what to say of them once the run is over (a served robot's task, which may
run it again): None, the warning is logged at once."""


def chain_callbacks(
    stored: Callable[[str], Any] | None, per_call: Callable[[str], Any] | None
) -> Callable[[str], Any] | None:
    """One content callback calling the stored one, then the per-call one (None if neither)."""
    if stored is None or per_call is None:
        return stored or per_call

    def both(chunk: str) -> None:
        stored(chunk)
        per_call(chunk)

    return both


def _as_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if result is None:
        return ""
    if isinstance(result, (dict, list, int, float, bool)):
        return json.dumps(result, default=str)
    return str(result)


def reply_entries(reply: LLMReply) -> list[ReplyEntry | ToolCallEntry]:
    """The history entries of one model answer: the reply, then each tool call it asks for."""
    entries: list[ReplyEntry | ToolCallEntry] = [ReplyEntry(
        content=reply.content, reasoning=reply.reasoning, model=reply.model,
        input_tokens=reply.usage.input_tokens, output_tokens=reply.usage.output_tokens,
        cost=reply.cost,
    )]
    entries += [ToolCallEntry(id=call.id, name=call.name, arguments=dict(call.arguments))
                for call in reply.tool_calls]
    return entries


@dataclass
class LoopOutcome:
    """What the loop produced: the last reply, this turn's last assistant text, and the summed
    usage."""

    reply: LLMReply
    last_text: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    parsed: Any = None
    truncated: bool = False
    """Whether any reply of the run was cut by the output-token limit."""

    @property
    def stop_reason(self) -> str | None:
        """``max_tokens`` when the final reply was cut by the output-token limit, else None."""
        return "max_tokens" if self.reply.truncated else None

    def text(self) -> str | None:
        """Content, else thinking text, else this turn's last non-empty assistant text, else
        None."""
        if self.reply.content and self.reply.content.strip():
            return self.reply.content
        if self.reply.reasoning and self.reply.reasoning.strip():
            return self.reply.reasoning
        return self.last_text


@dataclass
class ToolLoop:
    """One run's round trips against ``llm`` with ``tools`` (see the module docstring)."""

    llm: LLM
    params: dict[str, Any]
    tools: Sequence[Tool]
    scope: HookScope
    robot: Any = None
    on_chunk: ChunkCallback | None = None
    on_tool_call: Callable[[ToolCall], Any] | None = None
    on_tool_result: Callable[[Any], Any] | None = None
    on_truncated: Callable[[int | None], Any] | None = None
    """Called with the ``max_tokens`` of a call whose reply that limit cut (None: the provider's
    own); when set, the caller reports the cut and the loop logs no warning of its own."""
    max_tool_rounds: int | None = None
    bound_by: str = "max_tool_rounds"
    """The setting ``max_tool_rounds`` came from, named when the circuit breaker trips."""
    doom_loop_threshold: int | None = None
    structured: StructuredOutput | None = None
    streaming: bool = True
    """False: each model call is made whole and ``on_chunk`` gets its text once, as one chunk."""

    @classmethod
    def of_robot(cls, robot: Any, settings: Any, params: dict[str, Any], tools: Sequence[Tool],
                 scope: HookScope, on_content: ChunkCallback | None = None,
                 structured: StructuredOutput | None = None) -> ToolLoop:
        """The loop of one run of ``robot``: its LLM, and the callbacks and limits of its config.

        A robot that sets no ``max_tool_rounds`` is bounded by ``settings.max_tool_iterations``
        (``settings``: the robot's defaults, a ``robotlab.config.settings.Settings``), and
        ``settings.streaming_enabled`` decides whether its content callbacks are streamed.
        """
        config = robot.config
        rounds, bound_by = config.max_tool_rounds, "max_tool_rounds"
        if rounds is None:
            rounds, bound_by = settings.max_tool_iterations, "max_tool_iterations"
        return cls(robot.llm, params, tools, scope, robot,
                   on_chunk=chain_callbacks(config.on_content, on_content),
                   on_tool_call=config.on_tool_call, on_tool_result=config.on_tool_result,
                   on_truncated=config.on_truncated, max_tool_rounds=rounds, bound_by=bound_by,
                   doom_loop_threshold=config.doom_loop_threshold, structured=structured,
                   streaming=settings.streaming_enabled)

    def __post_init__(self) -> None:
        self._by_name = {tool.name: tool for tool in self.tools}
        self._schemas = [tool.to_json_schema() for tool in self.tools]
        self._doom = DoomLoopDetector(self.doom_loop_threshold)
        self._calls_made = 0
        self._schema_retried = False
        self._work = effects.work_id()
        self._effects_made = 0
        self._report = effects.reporter()  # told of each side-effect call that returns

    def run(self, history: HistoryLog, system: list[dict[str, Any]]) -> LoopOutcome:
        """Ask the model with ``system`` plus the rendered ``history``, record and run its tool
        calls, and repeat until a reply has no tool calls (inside an ``invoke_agent`` span when
        traced)."""
        if not tracing.ENABLED:
            return self._loop(history, system)
        model = self.params.get("model")
        with spans.invoking(str(getattr(self.robot, "name", "robot")), model) as span:
            outcome = self._loop(history, system)
            spans.used(span, outcome.input_tokens, outcome.output_tokens, self._cost(outcome.cost))
            return outcome

    def _cost(self, dollars: float) -> float | None:
        """``dollars`` when the model has a price.

        None ("unknown") when its 0.0 only means unpriced.
        """
        model = self.params.get("model")
        return dollars if dollars or (isinstance(model, str) and is_priced(model)) else None

    def _loop(self, history: HistoryLog, system: list[dict[str, Any]]) -> LoopOutcome:
        outcome: LoopOutcome | None = None
        while True:
            reply = self._ask(system + history.messages())
            outcome = self._account(outcome, reply)
            history.append(*reply_entries(reply))
            if not reply.tool_calls:
                if self.structured is None or self._validated(outcome, history):
                    return outcome
                continue
            for call in reply.tool_calls:
                history.append(self._dispatch(call, outcome))

    def _validated(self, outcome: LoopOutcome, history: HistoryLog) -> bool:
        """Parse the final reply into ``outcome.parsed``; on the first failure, ask once more."""
        assert self.structured is not None
        try:
            outcome.parsed = self.structured.parse(outcome.text())
        except ValueError as exc:
            if self._schema_retried:
                raise invalid_twice(str(exc)) from exc
            self._schema_retried = True
            history.append(TaskEntry(content=RETRY_PROMPT.format(error=exc)))
            return False
        return True

    def _ask(self, messages: list[dict[str, Any]]) -> LLMReply:
        streamed_to = self.on_chunk if self.streaming else None
        if tracing.ENABLED:
            with spans.chatting(self.params.get("model")) as span:
                reply = self.llm.complete(messages, self._schemas, self.params, streamed_to)
                spans.used(span, reply.usage.input_tokens, reply.usage.output_tokens,
                           self._cost(reply.cost), reply.model)
        else:
            reply = self.llm.complete(messages, self._schemas, self.params, streamed_to)
        if not self.streaming and self.on_chunk is not None and reply.content:
            self.on_chunk(reply.content)
        if reply.tool_calls or not self._schemas:
            return reply
        schemas = {name: tool.parameters for name, tool in self._by_name.items()}
        calls = (parse_text_tool_calls(reply.content, self._by_name, schemas)
                 or parse_file_blocks(reply.content, schemas))
        if not calls:
            return reply
        return dataclasses.replace(reply, content=None, tool_calls=calls)

    def _account(self, outcome: LoopOutcome | None, reply: LLMReply) -> LoopOutcome:
        if outcome is None:
            outcome = LoopOutcome(reply)
        outcome.reply = reply
        if reply.truncated:
            outcome.truncated = True
            self._report_truncation(reply.usage)
        if (reply.content or "").strip():
            outcome.last_text = reply.content
        outcome.input_tokens += reply.usage.input_tokens
        outcome.output_tokens += reply.usage.output_tokens
        outcome.cost += reply.cost
        return outcome

    def _report_truncation(self, usage: Usage) -> None:
        """Tell ``on_truncated``; without one, log the library's warning (it names robotd's
        flag)."""
        limit = self.params.get("max_tokens")
        written = None if usage.estimated else usage.output_tokens
        held = held_cuts.get()
        if self.on_truncated is not None:
            self.on_truncated(limit)
        elif held is not None:
            held.append((limit, written))
        else:
            robot_log.warning("%s", truncation_warning(getattr(self.robot, "name", "robot"), limit,
                                                       written))

    def _dispatch(self, call: ToolCall, outcome: LoopOutcome) -> ToolResultEntry:
        self._calls_made += 1
        if self.max_tool_rounds is not None and self._calls_made > self.max_tool_rounds:
            raise ToolLoopError(
                f"Circuit breaker triggered: {self._calls_made} tool calls exceeded "
                f"{self.bound_by} ({self.max_tool_rounds})"
            )
        if self.on_tool_call is not None:
            self.on_tool_call(call)
        result = self._execute(call)
        self._doom.track(call.name)
        warning = self._doom.warning()
        if warning is not None:
            result = annotate(result, warning)
            self._doom.reset()
        if self.on_tool_result is not None:
            self.on_tool_result(result)
        text = _as_text(result)
        outcome.tool_calls.append({"name": call.name, "arguments": call.arguments, "result": text})
        return ToolResultEntry(id=call.id, name=call.name, content=text)

    def _call(self, tool: Tool, arguments: Any, key: str | None) -> Any:
        """Call ``tool``; a side-effect call (``key``) runs with its key, and once it returns
        it is reported done (to the broker, for a bus message's run)."""
        if key is None:
            return tool.call(arguments)
        with effects.calling(key):
            result = tool.call(arguments)
        if self._report is not None:
            self._report(key)
        return result

    def _execute(self, call: ToolCall) -> Any:
        tool = self._by_name.get(call.name)
        if tool is None:
            return (f"Error ({call.name}): no tool named {call.name!r} is available; "
                    f"the tools are: {', '.join(self._by_name)}")
        tool.robot = self.robot
        ctx = ToolCallHookContext(tool=tool, tool_name=call.name, tool_args=call.arguments,
                                  robot=self.robot)

        key = None
        if tool.side_effects:
            self._effects_made += 1
            key = effects.key_for(self._work, self._effects_made)

        def core() -> Any:
            try:
                ctx.tool_result = self._call(tool, call.arguments, key)
            except Exception as exc:  # a failed tool is an observation for the model
                if tool.raises_on_error():
                    raise
                ctx.tool_error = exc
                ctx.tool_result = tool_error_text(call.name, exc)
                if not isinstance(exc, ToolError):
                    log.warning("tool %s failed: %s: %s", call.name, type(exc).__name__, exc)
            return ctx.tool_result

        if not tracing.ENABLED:
            return self.scope.run("tool_call", ctx, core)
        with spans.executing(call.name, call.id) as span:
            result = self.scope.run("tool_call", ctx, core)
            if ctx.tool_error is not None:
                spans.failed(span, ctx.tool_error)
            return result
