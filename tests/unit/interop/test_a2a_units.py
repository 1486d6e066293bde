"""A robot's A2A agent card, and which hosts a loopback-bound A2A server answers (no processes)."""

from __future__ import annotations

import socket

import pytest

from robotlab.interop.a2a_agent import agent_card
from robotlab.interop.a2a_serve import base_url, is_loopback_name


def test_a_card_names_the_robot_its_endpoint_and_one_skill() -> None:
    card = agent_card("bob", 1, "http://127.0.0.1:8766/robots/bob/")
    assert (card.name, [skill.id for skill in card.skills],
            card.capabilities.streaming) == ("bob", ["ask"], True)
    assert [(i.url, i.protocol_binding) for i in card.supported_interfaces] == [
        ("http://127.0.0.1:8766/robots/bob/", "JSONRPC")]
    assert "instances" not in card.description
    assert "one of its 3 instances answers" in agent_card(
        "bob", 3, "http://h/robots/bob/").description.lower()


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.0.1", True), ("::1", True), ("localhost", True),
    ("evil.example", False), ("10.0.0.1", False), ("", False), (None, False),
])
def test_only_loopback_names_are_loopback(host: str | None, loopback: bool) -> None:
    assert is_loopback_name(host) is loopback


def test_the_base_url_is_the_bound_address() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        assert base_url(sock) == f"http://127.0.0.1:{sock.getsockname()[1]}"
