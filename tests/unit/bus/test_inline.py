"""Inline handlers: run on the receiver's I/O thread, with the same acks, nacks and dedupe."""

from __future__ import annotations

import threading

import pytest

from robotlab import bus
from robotlab.errors import BusError, Nacked
from tests.waiting import wait_until


def test_an_inline_handler_runs_on_the_io_thread_and_answers(member) -> None:
    alice, bob = member("alice"), member("bob")
    threads: list[str] = []

    @bus.inline
    def echo(message: bus.Message) -> object:
        threads.append(threading.current_thread().name)
        return message.content

    bob.on_message(echo)
    assert [alice.request("bob", i, timeout=5).content for i in range(3)] == [0, 1, 2]
    assert threads == [f"robotlab-bus-{bob.name}"] * 3  # the I/O thread, never the handler thread


def test_inline_false_overrides_the_mark_and_plain_handlers_stay_on_the_handler_thread(
        member) -> None:
    alice, bob = member("alice"), member("bob")
    threads: list[str] = []
    handler = bus.inline(lambda m: threads.append(threading.current_thread().name) or "ok")
    bob.on_message(handler, inline=False)
    assert alice.request("bob", "x", timeout=5).content == "ok"
    assert threads == [f"robotlab-handler-{bob.name}"]


def test_an_inline_handler_that_raises_is_nacked_and_the_bus_goes_on(member) -> None:
    alice, bob = member("alice"), member("bob")

    def handler(message: bus.Message) -> object:
        if message.content == "bad":
            raise ValueError("no")
        return message.content

    bob.on_message(handler, inline=True)
    with pytest.raises(Nacked, match="ValueError: no"):
        alice.send("bob", "bad").wait(5)
    assert alice.request("bob", "good", timeout=5).content == "good"


def test_an_inline_handler_may_not_wait_for_a_reply(member) -> None:
    alice, bob, carol = member("alice"), member("bob"), member("carol")
    carol.on_message(lambda m: "carol")
    refused: list[str] = []

    def asks(message: bus.Message) -> None:
        try:
            bob.request("carol", "hi", timeout=5)
        except BusError as exc:
            refused.append(str(exc))

    bob.on_message(asks, inline=True)
    alice.send("bob", "go").wait(5)
    wait_until(lambda: refused, message="the request from inside the inline handler was refused")
    assert "inline handler cannot wait for a reply" in refused[0]
