"""Forget the requests whose Tracker nobody holds any more.

A client that runs for weeks then does not keep them.

:meth:`BusClient.send_request <robotlab.bus.BusClient.send_request>` registers its Tracker before it
sends, so that a fast reply finds its waiter. ``request()`` forgets the entry when it returns, and
a reply or a failure forgets it too. One case was left: a request delivered and never answered,
whose caller gave up on ``tracker.reply`` and let the tracker go. Nobody can read its reply any
more, yet the registration kept it for as long as the client ran.

A weak reference would tell when the caller let go, but the compiled Tracker (mypyc) cannot be
weakly referenced. The reference count tells it instead. An entry whose tracker has no more
references than a fresh probe object that only the table holds is one nobody waits on. A reply
that still comes for it goes to the handler, as a reply to an unawaited request always does.

This module is pure Python on purpose. The count has to be read the same way for every entry
and for the probe, and compiled code, which borrows some references, would not promise that.
"""

from __future__ import annotations

import sys
from typing import Any

_PROBE = "unheld-probe"
"""The probe's key; no message id looks like it (ids are ``epoch.n``)."""


def forget_unheld(requests: dict[str, Any]) -> int:
    """Drop every entry of ``requests`` that nothing else references; return how many are left.

    The caller holds the lock that guards ``requests``. The probe goes in last, and it is gone
    again before this returns.
    """
    requests[_PROBE] = object()
    counts = [(key, sys.getrefcount(value)) for key, value in list(requests.items())]
    # the probe's count: the table, the list's pair, the loop, the call
    only_the_table = counts[-1][1]
    for key, count in counts:
        if count <= only_the_table:
            del requests[key]
    return len(requests)
