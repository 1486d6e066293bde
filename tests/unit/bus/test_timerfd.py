"""The one-shot timer the reader's seat arms when a caller leaves
(robotlab/bus/member/timerfd.py)."""

from __future__ import annotations

import select

import pytest

from robotlab.bus.member.timerfd import OneShot, one_shot


@pytest.fixture
def timer():
    made = one_shot(0.001)
    if made is None:
        pytest.skip("no timerfd on this system (the seat falls back to looking on a timeout)")
    yield made
    made.close()


def test_it_fires_once_after_each_arm_and_clears(timer: OneShot) -> None:
    poller = select.poll()
    poller.register(timer.fd, select.POLLIN)
    assert poller.poll(0) == []  # never armed: never fires
    for _ in range(3):
        timer.arm()
        assert poller.poll(5_000) == [(timer.fd, select.POLLIN)]
        timer.clear()
        assert poller.poll(0) == []  # cleared, and one-shot: quiet until the next arm


def test_clearing_a_timer_that_has_not_fired_is_harmless(timer: OneShot) -> None:
    timer.clear()
    timer.arm()
    timer.clear()  # may come before the expiry: nothing to read, nothing raised
