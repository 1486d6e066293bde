"""Drawing a network's dependency graph: ASCII waves, Mermaid and Graphviz DOT.

Every drawing is made from the dependencies the tasks run by (``effective_dependencies``: an
optional task declared without dependencies waits for the tasks declared before it), so the
pictures agree with ``Network.execution_plan``. Optional tasks are marked: ``(optional)`` in
the label, a rounded node in Mermaid, a dashed node in DOT, and the edges into and out of
them dashed in both.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["TaskGraph", "ascii_tree", "dot", "mermaid"]


@dataclass(frozen=True)
class TaskGraph:
    """A network's tasks in declaration order, what each waits for, and its waves."""

    name: str
    depends_on: Mapping[str, Sequence[str]]
    optional: frozenset[str]
    waves: Sequence[Sequence[str]]

    def label(self, task: str) -> str:
        """The task's name, with ``(optional)`` after an optional task."""
        return f"{task} (optional)" if task in self.optional else task

    def edges(self) -> list[tuple[str, str, bool]]:
        """``(dependency, task, dashed)`` for every edge; dashed when either end is optional."""
        return [(dep, task, dep in self.optional or task in self.optional)
                for task, deps in self.depends_on.items() for dep in deps]


def ascii_tree(graph: TaskGraph) -> str:
    """The waves as an ASCII tree; each task with what it waits for (``<- a, b``)."""
    lines = [f"Network: {graph.name}"]
    for number, wave in enumerate(graph.waves, 1):
        last_wave = number == len(graph.waves)
        lines.append(f"{'`' if last_wave else '+'}-- wave {number}")
        indent = "    " if last_wave else "|   "
        for index, task in enumerate(wave):
            branch = "`--" if index == len(wave) - 1 else "+--"
            deps = graph.depends_on.get(task) or ()
            after = f" <- {', '.join(deps)}" if deps else ""
            lines.append(f"{indent}{branch} {graph.label(task)}{after}")
    if not graph.waves:
        lines.append("`-- (no tasks)")
    return "\n".join(lines)


def _mermaid_ids(names: Sequence[str]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for name in names:
        base = re.sub(r"\W", "_", name) or "task"
        candidate, number = base, 2
        while candidate in ids.values():
            candidate, number = f"{base}_{number}", number + 1
        ids[name] = candidate
    return ids


def mermaid(graph: TaskGraph) -> str:
    """A Mermaid ``flowchart TD``: rounded nodes and dashed edges for optional tasks."""
    ids = _mermaid_ids(list(graph.depends_on))
    lines = ["flowchart TD"]
    for task in graph.depends_on:
        text = graph.label(task).replace('"', "#quot;")
        shape = f'(["{text}"])' if task in graph.optional else f'["{text}"]'
        lines.append(f"    {ids[task]}{shape}")
    for dep, task, dashed in graph.edges():
        lines.append(f"    {ids[dep]} {'-.->' if dashed else '-->'} {ids[task]}")
    return "\n".join(lines)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot(graph: TaskGraph) -> str:
    """A Graphviz ``digraph``: dashed nodes and edges for optional tasks."""
    lines = [f"digraph {_quoted(graph.name)} {{", "    rankdir=LR;", "    node [shape=box];"]
    for task in graph.depends_on:
        extra = (f" [label={_quoted(graph.label(task))}, style=dashed]"
                 if task in graph.optional else "")
        lines.append(f"    {_quoted(task)}{extra};")
    for dep, task, dashed in graph.edges():
        lines.append(f"    {_quoted(dep)} -> {_quoted(task)}{' [style=dashed]' if dashed else ''};")
    lines.append("}")
    return "\n".join(lines)
