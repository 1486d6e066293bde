"""The objects a child's first run is expected to touch, found by profiling that run in a probe
child.

Most pages a child copies end up unchanged (a reference taken and dropped again), so the
words that differ cannot name what touched them. A probe child (forked from the same server,
so its inherited objects sit at the same addresses) runs under a profiler and lists, by
address, what CPython 3.11 takes a reference to while running: each function called, its code,
the constants of that code and the globals it names (module values, builtins).
"""

from __future__ import annotations

import builtins
import gc
import sys
from collections.abc import Callable
from types import CodeType, FrameType, FunctionType
from typing import Any


def profile(call: Callable[[], None]) -> dict[str, list[int]]:
    """Run ``call`` under a profiler; the addresses of the objects it touched, by label."""
    codes: dict[CodeType, dict[str, Any]] = {}
    called: dict[int, Any] = {}

    def record(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            codes.setdefault(frame.f_code, frame.f_globals)
        elif event == "c_call":
            called.setdefault(id(arg), arg)

    sys.setprofile(record)
    try:
        call()
    finally:
        sys.setprofile(None)
    return label(codes, called)


def label(codes: dict[CodeType, dict[str, Any]], called: dict[int, Any]) -> dict[str, list[int]]:
    gc.unfreeze()
    # In the order page_owners.EXPLANATIONS tries them: an object with two labels keeps the first.
    found: dict[str, set[int]] = {"hot code": {id(c) for c in codes}, "hot function": set(),
                                  "hot global": set(), "hot builtin call": set(called),
                                  "hot const": set()}
    for obj in gc.get_objects():
        if type(obj) is FunctionType and obj.__code__ in codes:
            found["hot function"].add(id(obj))
    for code, module in codes.items():
        found["hot const"].update(id(c) for c in code.co_consts if type(c) is not CodeType)
        for name in code.co_names:
            value = module.get(name, getattr(builtins, name, None))
            if value is not None:
                found["hot global"].add(id(value))
    return {name: sorted(ids) for name, ids in found.items()}
