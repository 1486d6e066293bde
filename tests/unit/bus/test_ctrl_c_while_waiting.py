"""Ctrl-C while a request waits for its reply is seen within a step of the wait, not when the
reply comes or the request times out."""

from __future__ import annotations

from tests.signalled import seconds_until_stopped


def test_a_signal_the_wait_did_not_see_is_handled_within_a_step_not_after_the_reply() -> None:
    waited = seconds_until_stopped("""
        from robotlab import bus
        from robotlab.bus import BrokerConfig, EmbeddedBroker

        broker = EmbeddedBroker(config=BrokerConfig(heartbeat=0.2)).start()
        slow = bus.connect(broker.url, name="slow")
        slow.on_message(lambda message: time.sleep(30))
        asker = bus.connect(broker.url, name="asker")
        signal_soon()
        asker.request("slow", "hi", timeout=60)
    """)

    assert waited < 10  # a step is 0.5 s; unstepped, the wait lasts until the 60 s time-out
