"""The robot name rule and the broker address check, where a client is made (``bus.connect``)."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

import pytest
from hypothesis import given
from hypothesis import strategies as st

from robotlab import bus
from robotlab.bus.config import check_endpoints, check_name, is_loopback, tcp_host_and_port
from robotlab.errors import ConfigError


@pytest.mark.parametrize("name", ["alice", "code-reviewer", "sage.1", "team/bob", "a" * 128,
                                  "ünïcode"])
def test_a_robot_name_without_spaces_passes(name: str) -> None:
    assert check_name(name) == name


@pytest.mark.parametrize(("name", "says"), [
    ("", "robot name is empty"),
    ("a b", "robot name 'a b' has ' ' in it"),
    ("tab\there", "has '\\t' in it"),
    ("a,b", "has ',' in it"),
    ("boss-*", "has '*' in it"),
    ("x" * 129, "129 characters long: at most 128"),
])
def test_a_name_no_one_could_address_is_one_line(name: str, says: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_name(name)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:5555", "ipc:///tmp/rl/broker.sock",
                                 "inproc://crew", "tcp://[::1]:5555", "tcp://a:1,tcp://b:2"])
def test_broker_addresses_pass(url: str) -> None:
    assert check_endpoints(url) == url


@pytest.mark.parametrize(("url", "says"), [
    ("http://x",
     "'http://x' is not a broker address: one looks like tcp://HOST:PORT, ipc:///path/to/socket"),
    ("ipc://", "'ipc://' is not a broker address"),
    ("127.0.0.1:5555", "is not a broker address"),
    ("tcp://host", "needs a host and a port"),
    ("tcp://host:port", "needs a host and a port"),
    ("tcp://host:65536", "needs a host and a port"),
    ("tcp://:5555", "needs a host and a port"),
    ("tcp://[::1:5555", "needs a host and a port"),
    ("tcp://host:5555/x", "needs a host and a port"),
    ("", "no broker address given"),
])
def test_anything_else_is_refused_saying_what_an_address_looks_like(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        check_endpoints(url)
    assert says in str(caught.value)


HOSTS = st.one_of(
    st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z0-9]{1,10}){0,3}\Z"),
    st.ip_addresses(v=4).map(str),
    st.ip_addresses(v=6).map(lambda address: f"[{address}]"),
)


@given(host=HOSTS, port=st.integers(0, 65535))
def test_a_tcp_address_is_read_as_urllib_reads_it(host: str, port: int) -> None:
    # read by hand (urllib.parse would bring ipaddress into every member), to the same result
    url = f"tcp://{host}:{port}"
    parts = urlsplit(url)
    assert tcp_host_and_port(url) == (parts.hostname, parts.port)


@pytest.mark.parametrize(("url", "loopback"), [
    ("tcp://127.0.0.1:5555", True), ("tcp://127.9.9.9:1", True), ("tcp://[::1]:5555", True),
    ("tcp://localhost:5555", True), ("tcp://LocalHost:5555", True),
    ("ipc:///tmp/rl/broker.sock", True), ("inproc://crew", True),
    ("tcp://0.0.0.0:5555", False), ("tcp://*:5555", False), ("tcp://[::]:5555", False),
    ("tcp://192.168.1.4:5555", False), ("tcp://example.com:5555", False),
])
def test_an_address_is_loopback_only_when_nothing_beyond_this_machine_can_reach_it(
        url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


def test_connect_refuses_an_http_url_with_a_config_error_not_zeromqs() -> None:
    with pytest.raises(ConfigError, match="is not a broker address"):
        bus.connect("http://x", timeout=0.5)


def test_connect_refuses_a_bad_name_and_stops_the_broker_it_started() -> None:
    before = threading.active_count()
    with pytest.raises(ConfigError, match="robot name 'a b'"):
        bus.connect(name="a b")
    assert threading.active_count() == before
