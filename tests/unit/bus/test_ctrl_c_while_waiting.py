"""Ctrl-C while a request waits for its reply is seen within a step of the wait, not when the
reply comes or the request times out.

The case runs in a Python process of its own: it installs a handler and signals itself.
"""

from __future__ import annotations

import subprocess
import sys

# The signal goes to another thread than the waiting one, as the kernel may choose, so nothing
# interrupts the wait: its Python handler runs only when the waiting thread wakes up.
SIGNAL_ELSEWHERE_DURING_A_REQUEST = """
import signal, threading, time
from robotlab import bus
from robotlab.bus import BrokerConfig, EmbeddedBroker

class Stop(Exception):
    pass

def on_signal(signum, frame):
    raise Stop

def signal_from_here():
    time.sleep(0.5)
    signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)

broker = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2)).start()
slow = bus.connect(broker.url, name="slow")
slow.on_message(lambda message: time.sleep(30))
asker = bus.connect(broker.url, name="asker")
signal.signal(signal.SIGUSR1, on_signal)
threading.Thread(target=signal_from_here, daemon=True).start()
started = time.monotonic()
try:
    asker.request("slow", "hi", timeout=60)
    print("the reply came first")
except Stop:
    print(f"stopped within 10 s: {time.monotonic() - started < 10}", flush=True)
import os
os._exit(0)  # the slow handler still sleeps; nothing here needs a clean exit
"""


def test_a_signal_the_wait_did_not_see_is_handled_within_a_step_not_after_the_reply() -> None:
    completed = subprocess.run([sys.executable, "-c", SIGNAL_ELSEWHERE_DURING_A_REQUEST],
                               capture_output=True, text=True, timeout=90, check=False)

    assert completed.stdout == "stopped within 10 s: True\n", completed.stderr
