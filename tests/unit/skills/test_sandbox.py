"""The skill-script sandbox (spec 17), with real bubblewrap and real Landlock: a script cannot
read outside its readable paths, write outside its writable paths, or reach the network when
the grant says no; on time-out its whole process group dies; where nothing can confine it,
an enabled sandbox refuses to run it."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from robotlab.config.settings import SandboxSettings
from robotlab.errors import SandboxUnavailable
from robotlab.skills import AgentSkill, ScriptTool
from robotlab.skills.landlock import abi_version, seccomp_supported
from robotlab.skills.sandbox import bubblewrap_works
from tests.waiting import wait_until


def _strategies() -> list[object]:
    return [
        pytest.param("bubblewrap", marks=pytest.mark.skipif(
            not bubblewrap_works(),
            reason="bwrap is not installed or cannot make namespaces here")),
        pytest.param("landlock", marks=pytest.mark.skipif(
            abi_version() < 1 or not seccomp_supported(),
            reason="the kernel has no Landlock or no seccomp")),
    ]


@pytest.fixture(params=_strategies())
def strategy(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def area(tmp_path: Path) -> dict[str, Path]:
    """A readable, a writable and a secret folder; the ceiling grants the first two."""
    paths = {name: tmp_path / name for name in ("readable", "writable", "secret")}
    for name, path in paths.items():
        path.mkdir()
        (path / "file.txt").write_text(f"{name} contents\n")
    return paths


def script_tool(bundle: Callable[..., Path], area: dict[str, Path], strategy: str, script: str,
                **settings: object) -> ScriptTool:
    declared = {"fs_read": [str(area["readable"]), str(area["secret"])],
                "fs_write": [str(area["writable"])]}
    ceiling = SandboxSettings(**{"enabled": True, "fs_read": [str(area["readable"])],
                                 "fs_write": [str(area["writable"])], "strategy": strategy,
                                 **settings})
    skill = AgentSkill(bundle("probe", {"probe.sh": f"#!/bin/bash\n{script}\n"}, **declared),
                       sandbox=ceiling)
    [tool] = skill.script_tools
    return tool


def test_a_script_reads_only_its_readable_paths(bundle: Callable[..., Path], area: dict[str, Path],
                                                strategy: str) -> None:
    tool = script_tool(bundle, area, strategy, 'cat "$1"')
    assert tool.execute(args=str(area["readable"] / "file.txt")) == "readable contents\n"
    denied = tool.execute(args=str(area["secret"] / "file.txt"))
    assert denied.startswith("Error (exit 1):")
    assert "secret contents" not in denied
    # only a few files of /etc
    assert tool.execute(args="/etc/shadow").startswith("Error (exit 1):")
    # the kernel log: no devices but a few
    assert tool.execute(args="/dev/kmsg").startswith("Error (exit 1):")


def test_a_script_writes_only_its_writable_paths(bundle: Callable[..., Path], area: dict[str, Path],
                                                 strategy: str) -> None:
    tool = script_tool(bundle, area, strategy, 'echo written > "$1" && echo ok')
    assert tool.execute(args=str(area["writable"] / "new.txt")) == "ok\n"
    assert (area["writable"] / "new.txt").read_text() == "written\n"
    for target in (area["readable"] / "new.txt", area["secret"] / "new.txt"):
        assert tool.execute(args=str(target)).startswith("Error (exit 1):")
        assert not target.exists()
    # Elsewhere the write fails (Landlock) or lands in the sandbox's private /tmp (bubblewrap):
    # either way nothing appears outside.
    elsewhere = area["readable"].parent / "new.txt"
    tool.execute(args=str(elsewhere))
    assert not elsewhere.exists()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP server on loopback that a script with network access can reach."""
    server = socket.create_server(("127.0.0.1", 0))
    server.listen(4)
    yield server
    server.close()


CONNECT = 'exec 3<>/dev/tcp/127.0.0.1/"$1" && echo connected'


def test_network_off_refuses_a_socket(bundle: Callable[..., Path], area: dict[str, Path],
                                      strategy: str, listener: socket.socket) -> None:
    port = str(listener.getsockname()[1])
    assert script_tool(bundle, area, strategy,
                       CONNECT).execute(args=port).startswith("Error (exit 1):")


def test_network_on_in_both_the_skill_and_the_ceiling_allows_it(
        bundle: Callable[..., Path], area: dict[str, Path], strategy: str,
        listener: socket.socket) -> None:
    port = str(listener.getsockname()[1])
    tool = script_tool(bundle, area, strategy, CONNECT, network=True)
    assert tool.execute(args=port).startswith("Error (exit 1):"), ("the skill did not ask for the "
                                                                   "network")
    tool.capabilities = type(tool.capabilities)(network=True)
    assert tool.execute(args=port) == "connected\n"


def test_a_time_out_kills_the_whole_group(bundle: Callable[..., Path], area: dict[str, Path],
                                          strategy: str, tmp_path: Path) -> None:
    pid_file = area["writable"] / "child.pid"
    tool = script_tool(bundle, area, strategy,
                       f'echo started; sleep 300 & echo $! > {pid_file}; wait', timeout=1)
    output = tool.execute()
    assert output.startswith("Error (timed out):\nstarted\n")
    assert output.endswith("[killed: exceeded 1s]")
    if strategy == "landlock":  # under bubblewrap the pid is in the sandbox's own PID namespace
        child = int(pid_file.read_text())
        wait_until(lambda: not Path(f"/proc/{child}").exists()
                   or "Z" in Path(f"/proc/{child}/stat").read_text()
                   .split(")")[-1].split()[0], timeout=5, message="the script's child is gone")


def test_no_strategy_available_refuses_to_run(bundle: Callable[..., Path], area: dict[str, Path],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    marker = area["writable"] / "ran"
    tool = script_tool(bundle, area, "bubblewrap", f"touch {marker}")
    monkeypatch.setenv("PATH", str(area["secret"]))  # no bwrap to be found
    bubblewrap_works.cache_clear()
    try:
        with pytest.raises(SandboxUnavailable, match="bwrap cannot run here"):
            tool.execute()
    finally:
        bubblewrap_works.cache_clear()
    assert not marker.exists()
    assert SandboxUnavailable.exit_code == 69


def test_trust_core_and_a_disabled_sandbox_run_unconfined(bundle: Callable[..., Path],
                                                          area: dict[str, Path]) -> None:
    read_secret = f"cat {area['secret'] / 'file.txt'}"
    assert script_tool(bundle, area, "auto", read_secret,
                       enabled=False).execute() == "secret contents\n"
    core = script_tool(bundle, area, "auto", read_secret)
    core.capabilities = type(core.capabilities)(trust="core")
    assert core.grant()[1] == "none"
    assert core.execute() == "secret contents\n"
    assert os.access(core.path, os.X_OK)


@pytest.fixture
def datagrams() -> Iterator[socket.socket]:
    """A UDP socket on loopback that counts what reaches it."""
    receiver = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    receiver.bind(("127.0.0.1", 0))
    receiver.setblocking(False)
    yield receiver
    receiver.close()


def _received(receiver: socket.socket) -> list[bytes]:
    got = []
    while True:
        try:
            got.append(receiver.recv(64))
        except BlockingIOError:
            return got


SEND_UDP = 'echo datagram > /dev/udp/127.0.0.1/"$1" && echo sent'


def test_network_off_refuses_udp(bundle: Callable[..., Path], area: dict[str, Path], strategy: str,
                                 datagrams: socket.socket) -> None:
    port = str(datagrams.getsockname()[1])
    assert script_tool(bundle, area, strategy,
                       SEND_UDP).execute(args=port).startswith("Error (exit 1):")
    assert _received(datagrams) == []
    allowed = script_tool(bundle, area, strategy, SEND_UDP, network=True)
    allowed.capabilities = type(allowed.capabilities)(network=True)
    assert allowed.execute(args=port) == "sent\n"
    assert _received(datagrams) == [b"datagram\n"]  # the check above could have seen one


# bash has no Unix sockets; the system python (system paths are readable) stands in for a client.
UNIX_CLIENT = ("/usr/bin/python3 -I -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); "
               "s.connect(sys.argv[1]); s.sendall(b\"hello\"); print(\"connected\")' \"$1\"")


@pytest.mark.skipif(not Path("/usr/bin/python3").exists(),
                    reason="no /usr/bin/python3 to act as a client")
def test_network_off_refuses_a_unix_socket(bundle: Callable[..., Path], area: dict[str, Path],
                                           strategy: str) -> None:
    # The listening socket sits in the writable folder, which both sandboxes let the script see.
    path = area["writable"] / "a.sock"  # AF_UNIX paths are short (108 bytes)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    server.setblocking(False)
    try:
        refused = script_tool(bundle, area, strategy, UNIX_CLIENT).execute(args=str(path))
        assert refused.startswith("Error (exit 1):") and "Permission denied" in refused
        with pytest.raises(BlockingIOError):
            server.accept()
        allowed = script_tool(bundle, area, strategy, UNIX_CLIENT, network=True)
        allowed.capabilities = type(allowed.capabilities)(network=True,
                                                          fs_write=(str(area["writable"]),))
        assert allowed.execute(args=str(path)) == "connected\n"
        server.accept()[0].close()
    finally:
        server.close()


def test_the_socket_filter_leaves_socketpair_and_refuses_the_ways_round_it(
        bundle: Callable[..., Path], area: dict[str, Path]) -> None:
    probe = ("/usr/bin/python3 -I -c 'import ctypes, socket; a, b = socket.socketpair(); "
             "a.send(b\"x\"); print(b.recv(1)); libc = ctypes.CDLL(None, use_errno=True); "
             "print(libc.syscall(425, 1, None), ctypes.get_errno()); print(libc.syscall(0x40000000 "
             "| 41, 2, 2, 0), ctypes.get_errno())'")
    lines = script_tool(bundle, area, "landlock", probe).execute().splitlines()
    assert lines[:2] == ["b'x'", "-1 1"]  # socketpair works; io_uring_setup: EPERM
    if os.uname().machine == "x86_64":
        assert lines[2] == "-1 1"  # socket through the x32 ABI: EPERM, not a way round
