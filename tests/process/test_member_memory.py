"""A handler-only robotd stays light: what only a robot, a model or TLS needs is never imported.

Every module left out is memory each of hundreds of members does not hold (bench/member_memory.py
measures it); the handler asks the running process itself, after it has joined and served.
"""

from __future__ import annotations

import subprocess
import sys

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


DEPLOYED_MEMBER_NEVER_IMPORTS = ["pathlib", "urllib.parse", "ipaddress", "fnmatch"]
"""Not in a member as a deployment installs it (about 0.7 MB a member, bench/member_memory.py
--installed). A checkout's editable install imports pathlib at start-up in every process
(setuptools' import hook), so the test forgets them first and watches who imports them again."""


def test_a_handler_only_robotd_imports_no_pathlib_or_url_parser_of_its_own() -> None:
    script = (
        "import sys\n"
        f"watched = {DEPLOYED_MEMBER_NEVER_IMPORTS!r}\n"
        "for name in watched:\n"
        "    sys.modules.pop(name, None)\n"
        "import robotlab.robotd.start, robotlab.robotd.daemon, robotlab.bus.member.client\n"
        "print(sorted(name for name in watched if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
