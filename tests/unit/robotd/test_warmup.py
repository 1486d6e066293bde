"""The fork server's code relocation (robotd/warmup.py): hot functions get copies that behave the
same."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

from robotd import warmup


def scaled_sum(values: list[int], factor: int) -> int:
    return sum(value * factor for value in values)  # a generator: nested code, copied too


def never_called() -> str:
    return "cold"


def test_the_functions_a_call_runs_get_copies_of_their_code_that_behave_the_same() -> None:
    # Given two module functions, one of which the warm-up call runs
    hot_before, cold_before = scaled_sum.__code__, never_called.__code__
    nested_before = next(c for c in hot_before.co_consts if hasattr(c, "co_code"))

    # When the code that call ran is relocated
    results: list[int] = []
    moved = warmup.relocate_hot_code(lambda: results.append(scaled_sum([1, 2], 3)))

    # Then the hot function runs a new, equal code object, its comprehension's code is new too,
    # the original stays alive (no hole in the shared heap), and the cold one is untouched
    assert moved >= 1 and results == [9]
    assert scaled_sum.__code__ is not hot_before
    assert scaled_sum.__code__.co_code == hot_before.co_code
    nested_after = next(c for c in scaled_sum.__code__.co_consts if hasattr(c, "co_code"))
    assert nested_after is not nested_before
    assert hot_before in warmup._ORIGINALS
    assert never_called.__code__ is cold_before
    assert scaled_sum([1, 2, 3], 2) == 12 and never_called() == "cold"


def adder(n: int) -> Callable[[int], int]:
    def add(x: int) -> int:
        return x + n

    return add


def test_functions_that_share_a_code_object_share_its_copy() -> None:
    # Given two closures made by one function, so with one code object, and only one of them called
    one, two = adder(1), adder(2)
    shared = one.__code__

    # When the code the call ran is relocated
    warmup.relocate_hot_code(lambda: one(1))

    # Then both run one new copy (a decorator's wrappers stay one hot code object, not one each)
    assert one.__code__ is two.__code__ and one.__code__ is not shared
    assert one(1) == 2 and two(1) == 3


def test_each_warm_up_call_formats_litellm_s_unpriced_traceback_again() -> None:
    # Given litellm's cache of formatted tracebacks, holding the text of an earlier failure
    from litellm.litellm_core_utils import litellm_logging

    cached = litellm_logging._get_traceback_str_for_error
    cached("model openai/warm-up isn't mapped yet")
    assert cached.cache_info().currsize >= 1

    # When a warm-up call starts
    warmup._forget_formatted_tracebacks()

    # Then the cache is empty, so the next unpriced reply formats its traceback under the profiler
    assert cached.cache_info().currsize == 0


WARM_UP_TWICE = """
import json, threading
import litellm, zmq
from robotd import warmup
before = set(threading.enumerate())
shared = zmq.Context.instance()
warmup.warm_model_call(rounds=2)
print(json.dumps({
    "left": sorted(t.name for t in set(threading.enumerate()) - before),
    "shared_ended": shared.closed and zmq.Context.instance() is not shared,
    "cached_clients": len(litellm.in_memory_llm_clients_cache.cache_dict),
}))
"""


def test_a_warm_up_of_several_rounds_ends_every_thread_it_started_and_drops_its_clients() -> None:
    # In a process of its own, as the fork server is when it warms up: the warm-up terminates
    # ZeroMQ's shared context, which in a test worker would end the sockets other tests left on it.
    # Given a fresh process, its threads and ZeroMQ's shared context
    # When the warm-up makes two rounds of hosted robot runs against its stub, through a broker
    run = subprocess.run([sys.executable, "-c", WARM_UP_TWICE], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])

    # Then no thread it started is left (ZeroMQ's own ended with the shared context, which a
    # child makes anew), no HTTP client a child could share is cached, and no thread died
    assert found == {"left": [], "shared_ended": True, "cached_clients": 0}
    assert "Traceback" not in run.stderr, run.stderr


def test_renewing_litellm_s_logging_executor_ends_its_workers_and_leaves_it_usable() -> None:
    # Given litellm's logging executor with a worker running, bound by name in a litellm module
    import threading

    from litellm.litellm_core_utils import streaming_handler, thread_pool_executor

    assert thread_pool_executor.executor.submit(lambda: 1).result(timeout=5) == 1

    # When it is renewed, as after each warm-up call
    warmup._renew_logging_executor()

    # Then no worker is left, every litellm name for it is the new one, and it takes work again
    assert not [t for t in threading.enumerate() if t.name.startswith("litellm-logging")]
    assert streaming_handler.executor is thread_pool_executor.executor
    assert thread_pool_executor.executor.submit(lambda: 2).result(timeout=5) == 2
    warmup._renew_logging_executor()  # no worker left behind for the tests after this one
