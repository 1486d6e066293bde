"""The cheaper ``socket.get`` reads every option as pyzmq's own enum path did."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import zmq
from zmq.constants import SocketOption

from robotlab.bus.wire import protocol, sockopt


@pytest.fixture
def pair() -> Iterator[tuple[zmq.Socket, zmq.Socket]]:
    ctx = zmq.Context()
    a, b = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    a.bind("inproc://sockopt")
    b.connect("inproc://sockopt")
    yield a, b
    a.close(linger=0)
    b.close(linger=0)
    ctx.term()


def test_installed_with_this_pyzmq() -> None:
    assert sockopt.INSTALLED, "pyzmq's backend changed: sockopt.install() no longer applies"
    from zmq.backend.cython import _zmq

    assert _zmq.SocketOption is sockopt.member


def test_option_types_are_the_same_members_without_the_enum_class() -> None:
    from zmq.backend.cython import _zmq
    from zmq.constants import _OptType

    assert _zmq._OptType is not _OptType  # a plain namespace: no EnumType.__getattr__ per read
    assert [getattr(_zmq._OptType, m.name) for m in _OptType] == list(_OptType)


def test_every_member_maps_to_itself() -> None:
    for option in SocketOption:
        assert sockopt.member(int(option)) is option


def test_unknown_option_still_raises_value_error() -> None:
    with pytest.raises(ValueError):
        sockopt.member(99_999)


def test_get_reads_ints_bytes_and_more(pair: tuple[zmq.Socket, zmq.Socket]) -> None:
    a, b = pair
    a.setsockopt(zmq.LINGER, 123)
    assert a.get(int(zmq.LINGER)) == 123
    assert a.get(zmq.LINGER) == 123
    assert isinstance(a.get(int(zmq.LAST_ENDPOINT)), bytes)
    a.setsockopt(zmq.MAXMSGSIZE, 2**40)  # an int64 option
    assert a.get(zmq.MAXMSGSIZE) == 2**40
    assert isinstance(a.get(zmq.FD), int) and a.get(zmq.FD) >= 0  # an fd option
    assert not protocol.readable(a)
    b.send(b"one", zmq.SNDMORE)
    b.send(b"two")
    assert protocol.readable(a)
    assert protocol.recv(a, copied=2) == [b"one", b"two"]
    assert not protocol.readable(a)


def test_get_of_an_unknown_option_raises_as_before(pair: tuple[zmq.Socket, zmq.Socket]) -> None:
    with pytest.raises(zmq.ZMQError):
        pair[0].get(99_999)
