"""Ctrl-C during a bounded model call is seen within a step of the wait, not when the call ends."""

from __future__ import annotations

from tests.signalled import seconds_until_stopped


def test_a_signal_the_wait_did_not_see_is_handled_within_a_step_not_after_the_call() -> None:
    waited = seconds_until_stopped("""
        from robotlab.inference.bounded import bounded_items

        def slow_call():
            time.sleep(30)
            return "late"

        signal_soon()
        list(bounded_items(slow_call, time.monotonic() + 60, streaming=False))
    """)

    assert waited < 10  # a step is 0.5 s; unstepped, the wait lasts the call's 30 s
