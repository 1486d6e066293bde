"""A handler-only robotd stays light: what only a robot, a model or TLS needs is never imported.

Every module left out is memory each of hundreds of members does not hold (bench/member_memory.py
measures it); the handler asks the running process itself, after it has joined and served.
"""

from __future__ import annotations

import pytest

from robotlab import bus

pytestmark = pytest.mark.process

NEVER_IN_A_HANDLER_MEMBER = [
    "robotlab.robot",  # the Robot and its collaborators
    "litellm",  # the model client
    "pydantic",
    "jinja2",  # templates
    "opentelemetry",  # tracing, off unless an exporter is named
    "rich",
    "asyncio",  # pyzmq's monitor helpers would bring it, and ssl with it
    "ssl",
    "hashlib",  # secrets would bring it, and OpenSSL's libcrypto with it
    "importlib.metadata",  # only an exporter named by its entry point needs it
    "zmq.auth",  # only a keyed member reads a certificate
    "click",  # a handler-only command line is read without it
    "socket",  # only a member run by a service manager notifies it
    "uuid",  # ids are random bytes; uuid would bring platform too
    "dataclasses",  # the records a member reads are plain classes; dataclasses imports inspect,
    "inspect",  # and inspect dis and ast: about 1 MB of unique memory a member
]


def test_a_handler_only_robotd_imports_no_robot_model_tls_or_tracing(start_robotd,
                                                                     broker: str) -> None:
    start_robotd("lean", "lean_handlers:loaded")
    with bus.connect(broker, name="asker", timeout=10) as client:
        assert client.request("lean", NEVER_IN_A_HANDLER_MEMBER, timeout=10).content == []
