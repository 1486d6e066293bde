"""``Robot``: an LLM agent with a system prompt, tools, budgets, hooks and a conversation.

Read ``docs/robots.md`` first. A robot holds its collaborators: ``_setup`` (a
:class:`~robotlab.robot.setup.RobotSetup`: system message, config, tools, request parameters),
``conversation`` (:class:`~robotlab.robot.conversation.Conversation`), ``messaging`` (its bus
side, :class:`~robotlab.robot.messaging.RobotBus`), its budget and learnings. The spec's method
names for the conversation and the bus forward to those through ``robotlab/robot/facades.py``,
and its read-only properties (``model``, ``template``, ``local_tools``...) read them through
``robotlab/robot/readers.py``; ``tool_loop`` runs the round trips and ``llm`` is the provider
seam.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from robotlab.budget import Reservation, RobotBudget
from robotlab.config.model_settings import ModelSettings
from robotlab.config.run_config import RunConfig
from robotlab.history.compaction import maybe_compact
from robotlab.history.log import TaskEntry
from robotlab.hooks.hooks import (
    Hook,
    HookRegistry,
    HookScope,
    LlmGenerationHookContext,
    RunHookContext,
    global_hooks,
)
from robotlab.llm import LLM
from robotlab.robot.attachments import content_with, pop_attachments
from robotlab.robot.chat_methods import ChatMethods
from robotlab.robot.conversation import Conversation
from robotlab.robot.delegation import delegate as _delegate
from robotlab.robot.facades import BusFacade, ConversationFacade
from robotlab.robot.learnings import Learnings, record_learning
from robotlab.robot.messaging import RobotBus
from robotlab.robot.readers import RobotReaders
from robotlab.robot.result import RobotResult
from robotlab.robot.run_memory import active_memory
from robotlab.robot.runnable import Runnable
from robotlab.robot.setup import RobotSetup, validate_tool_names
from robotlab.robot.structured import ChatExtras
from robotlab.robot.tool_loop import LoopOutcome, ToolLoop
from robotlab.tools.mcp import MCPConnections
from robotlab.tools.selection import (
    is_explicit_none,
    is_none_value,
    parent_value,
    resolve,
    select_tools,
)
from robotlab.tools.tool import Tool

if TYPE_CHECKING:  # the settings module is loaded by the cascade, when a robot first reads it
    from robotlab.config.settings import Settings

__all__ = ["Robot", "build"]

_SETTINGS = frozenset((
    *ModelSettings.model_fields, "on_tool_call", "on_tool_result", "on_content", "on_truncated",
    "bus", "max_tool_rounds", "token_budget", "cost_budget", "doom_loop_threshold", "history_path",
))
"""The keyword settings a robot takes: every model field, plus these RunConfig fields."""


class Robot(Runnable, ChatMethods, ConversationFacade, BusFacade, RobotReaders):
    """An LLM agent. Every parameter is keyword-only and keeps its Ruby name (``docs/robots.md``).

    Args:
        name: default "robot" (a template's ``robot_name`` then wins).
        template, context, skills, system_prompt: the system message (``docs/templates.md``).
        local_tools: ``Tool`` instances or subclasses; ``tools``: allowed *names*, or
            "inherit"/"none"; ``mcp`` (legacy ``mcp_servers``): MCP servers (``docs/tools.md``).
        config: a ``RunConfig`` (or dict) under the keyword settings: ``model``, ``provider``,
            ``api_base``, ``api_key``, request parameters (``temperature``...), callbacks
            (``on_content``, ``on_tool_call``, ``on_tool_result``, ``on_truncated``: called with the
            ``max_tokens`` that cut a reply, instead of the robot's own warning),
            ``max_tool_rounds``, ``token_budget``, ``cost_budget``, ``doom_loop_threshold``, ``bus``
            (joined: ``docs/messaging.md``), ``history_path`` (the conversation log, loaded if it
            exists and saved after every step).
        llm: the ``LLM`` to call (default ``LiteLLM``; tests pass ``robotlab.testing.ScriptedLLM``).
        shared_hooks: the registry read before the robot's own, in place of the process-wide
            one ``robotlab.on`` fills, so another robot's or test's global hooks never reach it.
        defaults: the settings (``robotlab.config.settings.Settings``) the robot falls back to:
            the model and request parameters nothing else sets, ``max_tool_iterations``,
            ``streaming_enabled`` and the parent of ``tools``/``mcp`` "inherit". None: the
            process-wide settings (``robotlab.config()``), read when used, so ``configure()``
            reaches robots already built.

    Raises:
        TypeError: ``tools=`` holds tool objects rather than names (use ``local_tools=``), or an
            unknown keyword was given.
    """

    def __init__(
        self,
        *,
        name: str = "robot",
        template: str | None = None,
        system_prompt: str | None = None,
        context: dict[str, Any] | Callable[..., dict[str, Any]] | None = None,
        description: str | None = None,
        local_tools: Sequence[Tool | type[Tool]] = (),
        mcp_servers: Sequence[Any] = (),
        mcp: Any = "none",
        tools: Any = "none",
        enable_cache: bool = True,
        skills: Sequence[str] | None = None,
        mcp_discovery: bool = False,
        config: RunConfig | dict[str, Any] | None = None,
        llm: LLM | None = None,
        shared_hooks: HookRegistry | None = None,
        defaults: Settings | None = None,
        **settings: Any,
    ) -> None:
        validate_tool_names(tools)
        unknown = sorted(set(settings) - _SETTINGS)
        if unknown:
            raise TypeError(f"Robot() got unexpected keyword arguments: {', '.join(unknown)}")
        self.name = str(name)
        self.description = description
        self.skills = [str(s) for s in skills] if skills else None
        self.enable_cache = enable_cache
        self.mcp_discovery = mcp_discovery
        self.hooks = HookRegistry()
        self.shared_hooks = shared_hooks if shared_hooks is not None else global_hooks()
        self.total_input_tokens = self.total_output_tokens = 0
        self._learnings = Learnings()
        self._chat_extras = ChatExtras()
        self._memory: Any = None
        self._mcp = MCPConnections()
        explicit = {k: v for k, v in settings.items() if v is not None}
        chosen_mcp = mcp if not (mcp in (None, "none") and mcp_servers) else list(mcp_servers)
        explicit.update({k: v for k, v in (("mcp", chosen_mcp), ("tools", tools))
                         if not is_none_value(v)})
        self._setup = RobotSetup(self, template, system_prompt, context or {}, local_tools, llm,
                                 defaults)
        self._setup.apply(RunConfig.of(config).merge(RunConfig.of(explicit)), named=name != "robot")
        self._budget = RobotBudget(self.config.token_budget, self.config.cost_budget)
        self.conversation = Conversation(self._setup, self.config.history_path, self.name)
        self.messaging = RobotBus(self, settings.get("bus"))
        self._streams: tuple[TextIO | None, TextIO | None] = (None, None)

    config: RunConfig
    """The effective config: front matter, then ``config=``, then keyword arguments."""

    # -- its own memory, where AskUser talks, the Runnable protocol -------------------------

    @property
    def memory(self) -> Any:
        """The robot's own reactive memory (created on first use)."""
        if self._memory is None:
            from robotlab.memory.memory import Memory

            self._memory = Memory(enable_cache=self.enable_cache)
        return self._memory

    @property
    def input(self) -> TextIO:
        """Where ``AskUser`` reads the person's answers (stdin unless set)."""
        return self._streams[0] or sys.stdin

    @input.setter
    def input(self, stream: TextIO | None) -> None:
        self._streams = (stream, self._streams[1])

    @property
    def output(self) -> TextIO:
        """Where ``AskUser`` writes its questions (stdout unless set)."""
        return self._streams[1] or sys.stdout

    @output.setter
    def output(self, stream: TextIO | None) -> None:
        self._streams = (self._streams[0], stream)

    @property
    def crew(self) -> list[Robot]:
        """``[self]`` (the Runnable protocol)."""
        return [self]

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        message: str | None = None,
        *,
        tools: Any = "none",
        mcp: Any = "none",
        memory: Any = None,
        on_content: Callable[[str], Any] | None = None,
        hooks: type[Hook] | Hook | Sequence[type[Hook] | Hook] | None = None,
        network: Any = None,
        task: Any = None,
        network_memory: Any = None,
        network_config: RunConfig | None = None,
        **template_context: Any,
    ) -> RobotResult:
        """Send ``message`` and return the result (see ``docs/robots.md``).

        A bare ``run(msg)`` sends no tools: pass ``tools="inherit"`` for every attached tool,
        a list of names for some, or None for all without any allowlist. ``with_=`` (a path, an
        image URL, or a list) attaches files to the message (``robotlab.robot.attachments``).
        Other keyword arguments re-render the template.

        Raises:
            BudgetExceeded: a budget was already used up (nothing was spent).
            InferenceError: the provider failed, or this run crossed a budget.
            ToolLoopError: more tool calls than ``max_tool_rounds``.
        """
        scope = HookScope(self.shared_hooks, getattr(network, "hooks", None), self.hooks,
                          _listed(hooks))
        with active_memory(self.name, self._memory, lambda: self.memory, memory, network,
                           network_memory) as active:
            ctx = RunHookContext(robot=self, network=network, task=task, memory=active,
                                 config=self.config, request=message)
            call = _RunCall(message, tools, mcp, on_content, network_config, template_context,
                            scope, ctx)
            return scope.run("run", ctx, lambda: self._run(call))

    def _run(self, call: _RunCall) -> RobotResult:
        """Inside the run hooks: the skills, tools and template of the run, the budget reserved,
        then the generation inside its hooks; the result settles the budget."""
        started = time.monotonic()
        embedder = getattr(self._memory, "embedder", None)
        with self._setup.matched_skills(call.message, embedder) as skill_tools:
            sent_tools = self._prepare_tools(call, skill_tools)
            attachments = pop_attachments(call.template_context)
            if call.template_context and self._setup.prompt.has_template():
                self._setup.rerender(call.template_context)
            with self._reserved() as reservation:
                outcome = call.scope.run("llm_generation", call.generation_context(self),
                                         lambda: self._generate(call, attachments, sent_tools))
        result = self._build_result(outcome, started)
        self.conversation.log.end_run(None, result.reply)
        self._budget.settle(reservation, result.input_tokens + result.output_tokens, result.cost,
                            self.total_input_tokens + self.total_output_tokens)
        return result

    def _generate(self, call: _RunCall, attachments: list[Any],
                  sent_tools: list[Tool]) -> LoopOutcome:
        """Inside the generation hooks: compaction, the task entry, then the tool loop."""
        compacted = maybe_compact(self, self.conversation.log.messages(),
                                  self._setup.params()["model"], call.scope)
        if compacted is not None:
            self.conversation.log.rewrite(compacted, "compaction")
        self.conversation.log.begin_run(self._setup.run_system_text)
        text = self._learnings.inject(call.message)
        if text is not None:
            self.conversation.log.append(TaskEntry(content=content_with(text, attachments)))
        params = {**self._setup.params(call.network_config), **self._chat_extras.params()}
        loop = ToolLoop.of_robot(self, self._setup.settings(), params, sent_tools, call.scope,
                                 call.on_content, self._chat_extras.structured)
        return loop.run(self.conversation.log, self._setup.system_messages())

    @contextmanager
    def _reserved(self) -> Iterator[Reservation]:
        """The budget held for one generation; a generation that fails gives it back and ends the
        run with its error."""
        reservation = self._budget.reserve()
        try:
            yield reservation
        except BaseException as exc:
            self._budget.release(reservation)
            self.conversation.log.end_run(exc)
            raise

    def _prepare_tools(self, call: _RunCall, skill_tools: list[Tool]) -> list[Tool]:
        if not is_explicit_none(call.mcp):
            build = self.config.mcp
            parent = (parent_value("mcp", call.network_config, self._setup.settings())
                      if build == "inherit" else None)
            servers = resolve(call.mcp, resolve(build, parent))
            if servers:
                self._mcp.ensure(servers, call.message, discovery=self.mcp_discovery)
        parent = (parent_value("tools", call.network_config, self._setup.settings())
                  if self.config.tools == "inherit" else None)
        available = [*self._setup.local_tools, *skill_tools, *self._mcp.tools]
        return select_tools(available, call.tools, self.config.tools, parent,
                            max_tools=self.config.max_tools, robot_name=self.name)

    def _build_result(self, outcome: LoopOutcome | None, started: float) -> RobotResult:
        if outcome is None:
            return RobotResult(self.name, duration=time.monotonic() - started)
        self.total_input_tokens += outcome.input_tokens
        self.total_output_tokens += outcome.output_tokens
        return RobotResult(
            self.name, reply=outcome.text(), input_tokens=outcome.input_tokens,
            output_tokens=outcome.output_tokens, cost=outcome.cost,
            duration=time.monotonic() - started, tool_calls=outcome.tool_calls, raw=outcome.reply,
            parsed=outcome.parsed, truncated=outcome.truncated, stop_reason=outcome.stop_reason,
        )

    # -- other actions ---------------------------------------------------------------------

    def on(self, handler: type[Hook] | Hook, context: dict[str, Any] | None = None) -> Robot:
        """Register a hook for this robot's runs."""
        self.hooks.on(handler, context)
        return self

    def learn(self, text: str) -> Robot:
        """Keep a lesson for later runs (blank text does nothing); see ``docs/robots.md``."""
        text = (text or "").strip()
        if text:
            record_learning(self, self._learnings, text)
        return self

    def delegate(self, to: Any, task: str, *, async_: bool = False, **kwargs: Any) -> Any:
        """Run ``task`` on ``to`` (robot, spawn handle or bus name): its result, or a future if
        ``async_``."""
        return _delegate(self, self.messaging.delegatee(to), task, async_=async_, **kwargs)

    def update(self, **changes: Any) -> Robot:
        """Re-apply settings (``template``, ``context``, ``system_prompt``, ``model``, ...);
        returns self."""
        self._setup.update(changes)
        self._budget = self._budget.with_limits(self.config.token_budget, self.config.cost_budget)
        return self

    def reset_token_totals(self) -> Robot:
        """Zero the token counters and start the budget ledger over."""
        self.total_input_tokens = 0
        self.total_output_tokens = 0
        self._budget.reset()
        return self

    def reset_memory(self) -> Robot:
        """Clear the robot's own memory."""
        if self._memory is not None:
            self._memory.reset()
        return self

    def inject_mcp(self, sources: Sequence[Any]) -> Robot:
        """Adopt MCP tool sources connected elsewhere (``robotlab.tools.mcp.ToolSource``)."""
        self._mcp.inject(list(sources))
        return self

    def disconnect(self) -> Robot:
        """Close MCP connections."""
        self._mcp.close()
        return self

    def to_dict(self) -> dict[str, Any]:
        """Plain data describing the robot."""
        return {
            "name": self.name, "description": self.description, "template": self.template,
            "system_prompt": self.system_prompt, "model": self.model, "provider": self.provider,
            "local_tools": [t.name for t in self._setup.local_tools],
            "config": self.config.to_json_dict(),
            "learnings": self.learnings,
        }

    def __repr__(self) -> str:
        return f"<Robot {self.name} model={self.model}>"


@dataclass
class _RunCall:
    """One ``Robot.run`` call's arguments on their way to the tool loop, its hook scope and its
    run hooks' context."""

    message: str | None
    tools: Any
    mcp: Any
    on_content: Callable[[str], Any] | None
    network_config: RunConfig | None
    template_context: dict[str, Any]
    scope: HookScope
    run_ctx: RunHookContext

    def generation_context(self, robot: Robot) -> LlmGenerationHookContext:
        """The generation hooks' context: the run's network, task and memory as the run hooks
        left them, and ``robot``'s config now."""
        run = self.run_ctx
        return LlmGenerationHookContext(robot=robot, network=run.network, task=run.task,
                                        memory=run.memory, config=robot.config,
                                        request=self.message)


def _listed(hooks: type[Hook] | Hook | Sequence[type[Hook] | Hook] | None
            ) -> list[type[Hook] | Hook]:
    return [] if hooks is None else [hooks] if isinstance(hooks, (Hook, type)) else list(hooks)


def build(name: str = "robot", template: str | None = None, system_prompt: str | None = None,
          **opts: Any) -> Robot:
    """Make a robot: ``robotlab.build(name="bob", template="comedian", model=...)``."""
    return Robot(name=name, template=template, system_prompt=system_prompt, **opts)
