"""The tools an iteration's robot gets, as plain specs (name, description, schema, handler)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from robotlab.process_groups import Supervisor
from robotlab.to.guards.chain import GuardChain
from robotlab.to.tools import bash, files, submit
from robotlab.to.tools import crew as crew_tool


@dataclasses.dataclass(frozen=True)
class ToolSpec:
    """One tool, independent of the robot library's Tool type."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[[dict[str, Any]], str]


def toolset(
    capture: submit.Capture,
    chain: GuardChain,
    decisions: bool,
    local_tools: bool,
    supervisor: Supervisor | None = None,
    crew: list[str] | None = None,
    ask: crew_tool.Ask | None = None,
) -> list[ToolSpec]:
    """Submit first, then request_decision (if enabled), then read/write/edit/bash (local guards),
    then ask_crew (with a crew and a way to ``ask`` it)."""
    specs = [ToolSpec(submit.SUBMIT_NAME, submit.SUBMIT_DESCRIPTION, submit.SUBMIT_SCHEMA,
                      capture.submit)]
    if decisions:
        specs.append(ToolSpec(submit.DECISION_NAME, submit.DECISION_DESCRIPTION,
                              submit.DECISION_SCHEMA, capture.decide))
    if local_tools:
        for name, handler in (("read", files.read), ("write", files.write), ("edit", files.edit)):
            description, schema = files.SCHEMAS[name]
            specs.append(ToolSpec(name, description, schema, handler))  # type: ignore[arg-type]
        specs.append(ToolSpec("bash", bash.DESCRIPTION, bash.SCHEMA,
                              lambda args: bash.run_bash(chain.root, args, supervisor)))
    if crew and ask is not None:
        specs.append(ToolSpec(crew_tool.NAME, crew_tool.description(crew), crew_tool.schema(crew),
                              crew_tool.handler(crew, ask)))
    return [dataclasses.replace(spec, handler=chain.wrap(spec.name, spec.handler))
            for spec in specs]
