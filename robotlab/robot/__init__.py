"""A robot and its collaborators: set-up, the tool loop, conversation, results, and its bus side."""

from __future__ import annotations

from robotlab.robot.delegation import DelegationFuture
from robotlab.robot.message import RobotMessage
from robotlab.robot.result import RobotResult
from robotlab.robot.robot import Robot, build
from robotlab.robot.runnable import Runnable
from robotlab.robot.spawn import RemoteRobot

__all__ = ["DelegationFuture", "RemoteRobot", "Robot", "RobotMessage", "RobotResult", "Runnable",
           "build"]
