"""A way for compiled code to let CPython run the Python-level signal handlers waiting to run.

CPython runs a signal's Python handler (Ctrl-C's ``KeyboardInterrupt`` among them) on the main
thread when that thread next executes bytecode, or when a system call it is blocked in returns
early with EINTR. Code compiled by mypyc executes no bytecode: a wait there that the signal did
not interrupt (the kernel gave the signal to another thread, or it came just before the wait
blocked) would hold the handler until the wait is over. This module is never compiled
(``native.py`` lists what is); calling its function starts a frame, and CPython checks for
pending handlers as a frame starts.
"""

from __future__ import annotations


def run_pending_signal_handlers() -> None:
    """Run any Python-level signal handler that is pending (their exceptions propagate)."""
