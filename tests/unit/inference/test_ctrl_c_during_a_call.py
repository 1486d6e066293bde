"""Ctrl-C during a bounded model call is seen within a step of the wait, not when the call ends.

The case runs in a Python process of its own: it installs a handler and signals itself.
"""

from __future__ import annotations

import subprocess
import sys

# The signal goes to another thread than the waiting one, as the kernel may choose, so nothing
# interrupts the wait: its Python handler runs only when the waiting thread wakes up.
SIGNAL_ELSEWHERE_DURING_A_CALL = """
import signal, threading, time
from robotlab.inference.bounded import bounded_items

class Stop(Exception):
    pass

def on_signal(signum, frame):
    raise Stop

def slow_call():
    time.sleep(30)
    return "late"

def signal_from_here():
    time.sleep(0.3)
    signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)

signal.signal(signal.SIGUSR1, on_signal)
threading.Thread(target=signal_from_here).start()
started = time.monotonic()
try:
    list(bounded_items(slow_call, time.monotonic() + 60, streaming=False))
    print("the call ended first")
except Stop:
    print(f"stopped within 10 s: {time.monotonic() - started < 10}")
"""


def test_a_signal_the_wait_did_not_see_is_handled_within_a_step_not_after_the_call() -> None:
    completed = subprocess.run([sys.executable, "-c", SIGNAL_ELSEWHERE_DURING_A_CALL],
                               capture_output=True, text=True, timeout=90, check=False)

    assert completed.stdout == "stopped within 10 s: True\n", completed.stderr
