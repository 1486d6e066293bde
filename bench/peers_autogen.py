"""AutoGen's side of bench/peers.py, run in the peers' venv: gRPC host, echo agent, caller.

    python bench/peers_autogen.py --n 2000 --seconds 3     (prints one JSON line)

Three processes, like robotlab's broker + echo + client: ``--role host`` runs
``GrpcWorkerAgentRuntimeHost``, ``--role echo`` a worker runtime with the echo agent, and the
caller (this process) a third worker runtime that ``send_message``s to it through the host.
"""

import argparse
import asyncio
import json
import socket
import subprocess
import sys
import time
from dataclasses import dataclass

from autogen_core import (
    AgentId,
    MessageContext,
    RoutedAgent,
    message_handler,
    try_get_known_serializers_for_type,
)
from autogen_ext.runtimes.grpc import GrpcWorkerAgentRuntime, GrpcWorkerAgentRuntimeHost
from peers import PAYLOAD_TEXT, async_numbers


@dataclass
class Echo:
    text: str


class EchoAgent(RoutedAgent):
    """Answers every Echo with itself."""

    def __init__(self) -> None:
        super().__init__("echo")

    @message_handler
    async def on_echo(self, message: Echo, ctx: MessageContext) -> Echo:
        return message


async def worker(address: str) -> GrpcWorkerAgentRuntime:
    runtime = GrpcWorkerAgentRuntime(host_address=address)
    runtime.add_message_serializer(try_get_known_serializers_for_type(Echo))
    await runtime.start()
    return runtime


async def serve_host(address: str) -> None:
    host = GrpcWorkerAgentRuntimeHost(address=address)
    host.start()
    await asyncio.Event().wait()


async def serve_echo(address: str) -> None:
    runtime = await worker(address)
    await EchoAgent.register(runtime, "echo", EchoAgent)
    await asyncio.Event().wait()


async def measure(address: str, n: int, seconds: float) -> dict[str, float]:
    runtime = await worker(address)
    echo = AgentId("echo", "default")
    deadline = time.monotonic() + 60
    while True:  # until the echo agent's type is registered at the host
        try:
            await asyncio.wait_for(runtime.send_message(Echo("probe"), echo), 2)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)
    numbers = await async_numbers(lambda: runtime.send_message(Echo(PAYLOAD_TEXT), echo), n,
                                  seconds)
    await runtime.stop()
    return numbers


def wait_port(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"the AutoGen host never listened on port {port}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--role", choices=["host", "echo"])
    parser.add_argument("--address")
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    if args.role == "host":
        return asyncio.run(serve_host(args.address))
    if args.role == "echo":
        return asyncio.run(serve_echo(args.address))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"127.0.0.1:{port}"
    procs = [subprocess.Popen([sys.executable, __file__, "--role", "host", "--address", address])]
    try:
        wait_port(port)
        procs.append(subprocess.Popen([sys.executable, __file__, "--role", "echo", "--address",
                                       address]))
        print(json.dumps(asyncio.run(measure(address, args.n, args.seconds))), flush=True)
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    main()
