"""A network refuses a bad graph when it is built, naming the tasks involved."""

from __future__ import annotations

from typing import Any

import pytest

from robotlab.errors import ConfigError
from robotlab.network.flow import plan_waves
from robotlab.network.network import create_network
from robotlab.robot.result import RobotResult


class Member:
    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, message: Any = None, **kwargs: Any) -> RobotResult:
        return RobotResult(self.name, reply=str(message))


def test_a_cycle_is_refused_with_its_path() -> None:
    net = create_network(name="loop")
    net.task("a", Member("a"), depends_on=["c"])
    net.task("b", Member("b"), depends_on=["a"])
    net.task("c", Member("c"), depends_on=["b"])
    with pytest.raises(ConfigError, match=r"Dependency cycle in network 'loop': a -> c -> b -> a"):
        net.build()


def test_a_cycle_is_refused_when_the_with_block_ends() -> None:
    with pytest.raises(ConfigError, match="cycle"):
        with create_network(name="loop") as net:
            net.task("a", Member("a"), depends_on=["b"])
            net.task("b", Member("b"), depends_on=["a"])


def test_a_self_dependency_is_a_cycle() -> None:
    net = create_network(name="me").task("a", Member("a"), depends_on=["a"])
    with pytest.raises(ConfigError, match="a -> a"):
        net.run("x")


def test_an_unknown_dependency_is_refused() -> None:
    net = create_network(name="n").task("b", Member("b"), depends_on=["a", "z"])
    with pytest.raises(ConfigError,
                       match="Task 'b' depends on unknown task 'a', 'z' in network 'n'"):
        net.build()


def test_a_duplicate_task_is_refused_at_once() -> None:
    net = create_network(name="n").task("a", Member("a"))
    with pytest.raises(ConfigError, match="Task 'a' already exists in network 'n'"):
        net.task("a", Member("other"))


def test_a_robot_name_the_network_cannot_reach_is_refused() -> None:
    net = create_network(name="n").task("t", "ghost")
    with pytest.raises(ConfigError,
                       match="Task 't' names robot 'ghost', which is not in network 'n'"):
        net.build()


def test_a_robot_name_added_with_add_robot_resolves() -> None:
    helper = Member("helper")
    net = create_network(name="n").add_robot(helper).task("t", "helper")
    assert net.run("x").context["helper"].reply == "x"


def test_something_that_is_not_a_robot_is_refused() -> None:
    net = create_network(name="n").task("t", 42)
    with pytest.raises(ConfigError, match="Task 't' in network 'n' needs a robot"):
        net.build()


def test_waves_keep_declaration_order() -> None:
    deps = {"x": (), "y": (), "z": ("y",), "w": ("x", "z")}
    assert plan_waves(deps) == [["x", "y"], ["z"], ["w"]]
