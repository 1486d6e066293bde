"""The tracker's one-shot latch: every waiter is released by one set, a timeout says False."""

from __future__ import annotations

import threading

from robotlab.bus.member.tracking import Latch


def test_a_wait_times_out_false_until_set_then_every_wait_returns_true() -> None:
    latch = Latch()
    assert latch.wait(0.01) is False and latch.wait(0) is False
    latch.set()
    latch.set()  # a second set changes nothing
    assert latch.is_set() and latch.wait(0) and latch.wait(None) and latch.wait(0.01)


def test_one_set_releases_every_waiting_thread() -> None:
    latch = Latch()
    results: list[bool] = []
    waiting = threading.Barrier(5)

    def waiter() -> None:
        waiting.wait()
        results.append(latch.wait(30))

    threads = [threading.Thread(target=waiter) for _ in range(4)]
    for thread in threads:
        thread.start()
    waiting.wait()
    latch.set()
    for thread in threads:
        thread.join(30)
    assert results == [True] * 4
