"""A coverage-guided (atheris) fuzz target for the wire protocol's decoding.

Run by tests/process/test_protocol_fuzz.py for a bounded time; by hand, longer::

    python tests/process/fuzz/protocol_target.py -max_total_time=600

The property: :func:`protocol.decode` either raises ``ProtocolError`` or returns a frame whose
every schema field has its declared kind and bound, and which encodes and decodes to itself.
"""

from __future__ import annotations

import sys
from typing import Any

import atheris

from robotlab.bus import protocol
from robotlab.errors import ProtocolError

# Instrument only the decoding path: instrumenting every import of robotlab costs a minute.
for _name in ("decode", "_decode_header", "_check_header", "_ref", "_show", "_is_int", "_is_number"):
    setattr(protocol, _name, atheris.instrument_func(getattr(protocol, _name)))
protocol._KINDS.update({kind: atheris.instrument_func(check) for kind, check in protocol._KINDS.items()})


def value(fdp: atheris.FuzzedDataProvider, depth: int = 0) -> Any:
    """A msgpack-able value of a kind the fuzzer picks: the shapes a header field may be given."""
    kind = fdp.ConsumeIntInRange(0, 8 if depth < 2 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return fdp.ConsumeBool()
    if kind == 2:
        return fdp.ConsumeIntInRange(-(2**63), 2**64 - 1)
    if kind == 3:
        return fdp.ConsumeRegularFloat() if fdp.ConsumeBool() else fdp.ConsumeFloat()
    if kind == 4:
        return fdp.ConsumeUnicodeNoSurrogates(fdp.ConsumeIntInRange(0, 5000))
    if kind == 5:
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 16))
    if kind == 6:
        return [value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 5))]
    return {fdp.ConsumeUnicodeNoSurrogates(4): value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 5))}


def frames_from(data: bytes) -> list[bytes]:
    """Frames from fuzz bytes: raw frames, or (mostly) a valid envelope around a fuzzed header."""
    fdp = atheris.FuzzedDataProvider(data)
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return [fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64)) for _ in range(fdp.ConsumeIntInRange(0, 6))]
    command = fdp.PickValueInList(list(protocol.Command))
    names = [*protocol.SCHEMA[command], "extra"]
    header = {fdp.PickValueInList(names): value(fdp) for _ in range(fdp.ConsumeIntInRange(0, 8))}
    return [protocol.SIGNATURE, bytes([command]), protocol.pack(header), fdp.ConsumeBytes(fdp.remaining_bytes())]


def test_one_input(data: bytes) -> None:
    """One fuzz case (libFuzzer calls this)."""
    frames = frames_from(data)
    try:
        frame = protocol.decode(frames)
    except ProtocolError:
        return
    for name, spec in protocol.SCHEMA[frame.command].items():
        assert name not in frame.header or spec.accepts(frame.header[name]), (name, frame.header)
        assert not spec.required or name in frame.header, (name, frame.header)
    again = protocol.decode(protocol.encode(frame.command, frame.header, frame.body))
    assert again == frame, (again, frame)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
