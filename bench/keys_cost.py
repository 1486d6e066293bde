"""The price of CURVE keys on the bus, for ``python bench/bus.py --keys`` (run from there).

Two robotlab runs per round, interleaved, on loopback TCP: keyless, and with CURVE keys. The
second run uses keys for the broker (``--keys DIR``: it then reads each message's key from ZAP
metadata, ``broker/security.py``), for the robotd echo and for the client, each with its own
pair made by ``robotlab keys new`` in a fresh folder. The bus round trip's other tables keep
the keyless figure. Keys are what a crew across machines runs with (docs/broker.md, "Security").
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

NAMES = {"echo": ["--robot", "echo"], "bench-client": ["--robot", "bench-client"],
         "bench-probe": ["--robot", "bench-probe", "--role", "admin"]}
"""A key for each member of the run: the echo, the client, and the probe that asks ``ps``."""


def make_keys() -> str:
    """A fresh keys folder: the broker's pair, and one pair per member, authorized."""
    folder = tempfile.mkdtemp(prefix="rl-bench-keys-")
    cli = [sys.executable, "-m", "robotlab.cli", "keys", "new"]
    for name, options in {"broker": [], **NAMES}.items():
        subprocess.run([*cli, name, "--dir", folder, *options], check=True,
                       stdout=subprocess.DEVNULL)
    return folder


def main(args: argparse.Namespace, run_robotlab: Callable[..., dict[str, float]],
         alternate: Callable[..., Any], write_section: Callable[[str, str], None],
         cost_report: Callable[..., str]) -> None:
    folder = make_keys()

    def run(keyed: bool) -> dict[str, float]:
        if not keyed:
            return run_robotlab(args.n, args.seconds)
        os.environ["ROBOT_LAB_KEYS"] = folder  # the client and the probe in this process read it
        try:
            return run_robotlab(args.n, args.seconds, env={"ROBOT_LAB_KEYS": folder})
        finally:
            del os.environ["ROBOT_LAB_KEYS"]

    keyless, keyed = alternate(args.rounds, lambda: run(False), lambda: run(True))
    table = cost_report(keyless, keyed, ("keyless", "CURVE keys"))
    print(table)
    if args.write:
        write_section("Bus: the price of CURVE keys",
                      f"`python bench/bus.py --keys --n {args.n} --seconds {args.seconds:g} "
                      f"--rounds {args.rounds} --write`, {time.strftime('%Y-%m-%d')}, medians of "
                      f"{args.rounds} interleaved rounds, {os.cpu_count()} cores, on loopback TCP: "
                      "the round trip of \"Bus round trip\", keyless and with CURVE keys for the "
                      f"broker, the echo and the client (see bench/keys_cost.py).\n\n{table}")
