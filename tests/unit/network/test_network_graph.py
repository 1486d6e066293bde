"""Drawing a network's dependency graph: ASCII, Mermaid and DOT, exact output."""

from __future__ import annotations

import pytest

from robotlab.errors import ConfigError
from robotlab.network.network import Network, create_network
from tests.unit.network.test_network_build import Member


def _review() -> Network:
    net = create_network(name="review")
    net.task("draft", Member("draft"))
    net.task("critique", Member("critique"), depends_on=["draft"])
    net.task("legal", Member("legal"), depends_on=["draft"], optional=True)
    net.task("publish", Member("publish"), depends_on=["critique", "legal"])
    return net


def test_visualize_draws_the_waves_as_ascii() -> None:
    assert _review().visualize() == "\n".join([
        "Network: review",
        "+-- wave 1",
        "|   `-- draft",
        "+-- wave 2",
        "|   +-- critique <- draft",
        "|   `-- legal (optional) <- draft",
        "`-- wave 3",
        "    `-- publish <- critique, legal",
    ])


def test_to_mermaid_rounds_optional_tasks_and_dashes_their_edges() -> None:
    assert _review().to_mermaid() == "\n".join([
        "flowchart TD",
        '    draft["draft"]',
        '    critique["critique"]',
        '    legal(["legal (optional)"])',
        '    publish["publish"]',
        "    draft --> critique",
        "    draft -.-> legal",
        "    critique --> publish",
        "    legal -.-> publish",
    ])


def test_to_dot_dashes_optional_tasks_and_their_edges() -> None:
    assert _review().to_dot() == "\n".join([
        'digraph "review" {',
        "    rankdir=LR;",
        "    node [shape=box];",
        '    "draft";',
        '    "critique";',
        '    "legal" [label="legal (optional)", style=dashed];',
        '    "publish";',
        '    "draft" -> "critique";',
        '    "draft" -> "legal" [style=dashed];',
        '    "critique" -> "publish";',
        '    "legal" -> "publish" [style=dashed];',
        "}",
    ])


def test_a_loose_optional_task_is_drawn_after_the_tasks_declared_before_it() -> None:
    net = create_network(name="loose")
    net.task("a", Member("a"))
    net.task("extra", Member("extra"), depends_on="optional")
    net.task("b", Member("b"))
    assert net.visualize().splitlines()[1:] == [
        "+-- wave 1", "|   +-- a", "|   `-- b", "`-- wave 2", "    `-- extra (optional) <- a",
    ]
    assert net.execution_plan() == "wave 1: a, b\nwave 2: extra?"


def test_names_are_escaped_for_each_format() -> None:
    net = create_network(name='the "net"')
    net.task("fact check", Member("f"))
    net.task("fact-check", Member("g"), depends_on=["fact check"])
    assert net.to_mermaid().splitlines()[1:] == [
        '    fact_check["fact check"]', '    fact_check_2["fact-check"]',
        "    fact_check --> fact_check_2",
    ]
    assert net.to_dot().splitlines()[0] == 'digraph "the \\"net\\"" {'
    assert '    "fact check" -> "fact-check";' in net.to_dot().splitlines()


def test_an_empty_network_and_a_bad_graph() -> None:
    assert create_network(name="empty").visualize() == "Network: empty\n`-- (no tasks)"
    bad = create_network(name="bad").task("a", Member("a"), depends_on=["ghost"])
    with pytest.raises(ConfigError, match="unknown task 'ghost'"):
        bad.to_mermaid()
