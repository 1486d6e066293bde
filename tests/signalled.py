"""A Python process of its own that is sent a signal the waiting thread does not see.

The kernel may give a process's signal to any of its threads. Then nothing interrupts what the
main thread waits in, and the Python handler runs only once that thread wakes and runs bytecode:
how late Ctrl-C is seen depends on how long the main thread's waits are. The process here sends
SIGUSR1 to another of its threads while its main thread waits in ``body``; the handler raises
``Stop``. Each case runs in a process of its own, which installs a handler and signals itself.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

PRELUDE = """
import os, signal, threading, time

class Stop(Exception):
    pass

def on_signal(signum, frame):
    raise Stop

def signal_from_another_thread(after):
    time.sleep(after)
    signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)

def signal_soon():
    global started
    started = time.monotonic()
    threading.Thread(target=signal_from_another_thread, args=(0.5,), daemon=True).start()

signal.signal(signal.SIGUSR1, on_signal)
started = waited = None
try:
{body}
except Stop:
    waited = time.monotonic() - started
print("stopped" if waited is not None else "not stopped", flush=True)
print(f"{{waited or 0:.1f}}", flush=True)
os._exit(0)  # what the body started may still run; nothing here needs a clean exit
"""


def seconds_until_stopped(body: str, timeout: float = 90) -> float:
    """Run ``body``, which calls ``signal_soon()`` just before its wait (the signal is sent 0.5 s
    later); the seconds from that call until the handler stopped the wait.

    Raises:
        AssertionError: the body ended without the handler stopping it.
    """
    script = PRELUDE.format(body=textwrap.indent(textwrap.dedent(body), "    "))
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                               timeout=timeout, check=False)
    lines = completed.stdout.splitlines()
    assert lines[:1] == ["stopped"], completed.stdout + completed.stderr
    return float(lines[1])
