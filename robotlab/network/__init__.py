"""Networks: robots in a dependency pipeline sharing one memory, wherever each robot runs."""

from __future__ import annotations

from robotlab.network.flow import FlowResult
from robotlab.network.network import Network, create_network
from robotlab.network.task import Task

__all__ = ["FlowResult", "Network", "Task", "create_network"]
