"""SignalRelay: a stop signal's work runs on the relay's thread, so it may take any lock.

Each case runs in a Python process of its own: it sends itself signals and installs handlers,
which must not touch the test worker's.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

PRELUDE = """
import os, signal, threading, time
from robotlab.signal_relay import SignalRelay
"""

# The main thread holds a lock when the signal comes; the signal's work needs that lock. The
# Python handler runs on the main thread at its next bytecode, inside the ``with`` block.
LOCK_HELD_AT_THE_SIGNAL = """
lock = threading.Lock()
done = threading.Event()

def on_signal(signum):
    with lock:
        done.set()

{install}
with lock:
    os.kill(os.getpid(), signal.SIGUSR1)
    for _ in range(1000):  # bytecodes for the handler to run between
        pass
print("handled" if done.wait(10) else "not handled", flush=True)
"""


def _run(script: str, timeout: float = 30) -> str:
    completed = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(script)],
                               capture_output=True, text=True, timeout=timeout, check=False)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_the_work_of_a_signal_may_take_a_lock_the_interrupted_thread_holds() -> None:
    relayed = LOCK_HELD_AT_THE_SIGNAL.format(
        install="SignalRelay(on_signal, (signal.SIGUSR1,)).install()")

    assert _run(relayed) == "handled\n"


def test_without_the_relay_the_same_handler_waits_on_its_own_thread_forever() -> None:
    direct = LOCK_HELD_AT_THE_SIGNAL.format(
        install="signal.signal(signal.SIGUSR1, lambda signum, frame: on_signal(signum))")

    with pytest.raises(subprocess.TimeoutExpired):
        _run(direct, timeout=3)


def test_restore_puts_the_previous_handlers_back_and_ends_the_thread() -> None:
    out = _run("""
        previous = signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        relay = SignalRelay(lambda signum: None, (signal.SIGUSR1,)).install()
        print(signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN)
        relay.restore()
        print(signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN)
        print([t.name for t in threading.enumerate() if t.name == "signal-relay"])
    """)

    assert out.split("\n") == ["False", "True", "[]", ""]


def test_a_failing_handler_leaves_the_relay_working_for_the_next_signal() -> None:
    out = _run("""
        seen = []
        second = threading.Event()

        def on_signal(signum):
            seen.append(signal.Signals(signum).name)
            if len(seen) == 1:
                raise RuntimeError("the first one fails")
            second.set()

        SignalRelay(on_signal, (signal.SIGUSR1, signal.SIGUSR2)).install()
        os.kill(os.getpid(), signal.SIGUSR1)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGUSR2)
        print(second.wait(10), seen)
    """)

    assert out == "True ['SIGUSR1', 'SIGUSR2']\n"


def test_a_forked_child_relays_nothing_to_its_parent_and_has_the_old_handlers_back() -> None:
    out = _run("""
        seen = []
        signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        SignalRelay(seen.append, (signal.SIGUSR1,)).install()
        pid = os.fork()
        if pid == 0:
            os.write(1, b"child: %d " % (signal.getsignal(signal.SIGUSR1) == signal.SIG_IGN))
            os.kill(os.getpid(), signal.SIGUSR1)
            os._exit(0)
        os.waitpid(pid, 0)
        os.kill(os.getpid(), signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # a signal relayed from the child would have arrived by now
        print(seen)
    """)

    assert out == f"child: 1 [{int(signal.SIGUSR1)}]\n"


def test_a_signal_that_arrives_as_the_main_thread_blocks_is_handled_at_once() -> None:
    # The main thread blocks for 60 s in a lock's timed wait, and the kernel gives the signal to
    # another thread: nothing interrupts that wait, and a Python-level handler runs after it.
    out = _run("""
        woken = threading.Event()
        SignalRelay(lambda signum: woken.set(), (signal.SIGUSR1,)).install()
        sender = threading.Thread(target=lambda: (
            time.sleep(0.5), signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)))
        started = time.monotonic()
        sender.start()
        woken.wait(60)
        print(f"{time.monotonic() - started < 30}")
    """, timeout=90)

    assert out == "True\n"
