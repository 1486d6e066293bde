"""``robotlab top``: the ``ps`` view, refreshed every interval until Ctrl-C.

On a terminal the table is redrawn in place (rich's ``Live``); elsewhere (a pipe, a file, a
test) the table is printed once per interval, each under a time line, so nothing is drawn
over. A broker that stops answering is said in the view and asked again at the next tick;
``--once`` has no next tick, so there an error ends the command with its exit code.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from robotlab.errors import BusError, PeerUnavailable

from .output import table
from .ps_view import COLUMNS, table_row

Fetch = Callable[[], list[dict[str, Any]]]


def view(fetch: Fetch, url: str) -> Any:
    """One frame of the view: a title line and the table (or why there is none)."""
    from rich.console import Group
    from rich.text import Text

    stamp = time.strftime("%H:%M:%S")
    try:
        rows = fetch()
    except (PeerUnavailable, BusError) as exc:
        return Text(f"{stamp}  {url}: {exc}", style="bold red")
    title = Text(f"{stamp}  {url}: {len(rows)} member{'s' * (len(rows) != 1)}  (Ctrl-C to quit)",
                 style="bold")
    if not rows:
        return Group(title, Text("no robots on the bus"))
    return Group(title, table([table_row(r) for r in rows], COLUMNS, cut=sys.stdout.isatty()))


def run(fetch: Fetch, url: str, interval: float, once: bool,
        stop: threading.Event | None = None) -> None:
    """Show the view until ``stop`` is set or Ctrl-C (KeyboardInterrupt ends it quietly)."""
    from rich.console import Console

    stop = stop or threading.Event()
    console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 100_000)
    try:
        if once:
            rows = fetch()  # an error ends the command, one line and its exit code, as ps does
            console.print(view(lambda: rows, url))
        elif not console.is_terminal:
            _print_each(console, fetch, url, interval, stop)
        else:
            _live(console, fetch, url, interval, stop)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how one leaves top: a clean exit


def _print_each(console: Any, fetch: Fetch, url: str, interval: float,
                stop: threading.Event) -> None:
    while True:
        console.print(view(fetch, url))
        sys.stdout.flush()
        if stop.wait(interval):
            return


def _live(console: Any, fetch: Fetch, url: str, interval: float, stop: threading.Event) -> None:
    from rich.live import Live

    with Live(view(fetch, url), console=console, auto_refresh=False, screen=False) as live:
        while not stop.wait(interval):
            live.update(view(fetch, url), refresh=True)
