"""A coverage-guided (atheris) fuzz target for the wire protocol's decoding.

Run by tests/process/test_protocol_fuzz.py for a bounded time; by hand, longer::

    python tests/process/fuzz/protocol_target.py -max_total_time=600

The property: :func:`protocol.decode` either raises ``ProtocolError`` or returns a frame whose
every schema field has its declared kind and bound, and which encodes and decodes to itself.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import atheris

# The pure-Python source of the bus (robotlab/bus/native.py): atheris instruments Python
# functions, and the compiled decode has none to instrument. The compiled one meets the same
# frames in tests/unit/bus (the broker's fuzz test and the stateful tests run it).
os.environ["ROBOT_LAB_PURE"] = "1"

from robotlab.bus.wire import protocol, schema  # noqa: E402
from robotlab.errors import ProtocolError  # noqa: E402

# Instrument only the decoding path: instrumenting every import of robotlab costs a minute.
for _name in ("decode", "_first_frame"):
    setattr(protocol, _name, atheris.instrument_func(getattr(protocol, _name)))
for _name in ("_check_header", "_check_required", "_refuse", "_ref", "_show", "_is_int",
              "_is_number"):
    setattr(schema, _name, atheris.instrument_func(getattr(schema, _name)))
protocol._check_header = schema._check_header  # decode calls the name protocol imported
schema._KINDS.update({kind: atheris.instrument_func(check)
                      for kind, check in schema._KINDS.items()})


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
    return {fdp.ConsumeUnicodeNoSurrogates(4): value(fdp, depth + 1)
            for _ in range(fdp.ConsumeIntInRange(0, 5))}


def frames_from(data: bytes) -> list[bytes]:
    """Frames from fuzz bytes: raw frames, a valid signature before fuzzed bytes (a header
    length that lies, a truncated prefix), or (mostly) a valid envelope around a fuzzed header,
    its body in the frame or in a second one."""
    fdp = atheris.FuzzedDataProvider(data)
    shape = fdp.ConsumeIntInRange(0, 5)
    if shape == 0:
        return [fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 64))
                for _ in range(fdp.ConsumeIntInRange(0, 6))]
    if shape == 1:
        return [protocol.SIGNATURE + fdp.ConsumeBytes(fdp.remaining_bytes())]
    command = fdp.PickValueInList(list(protocol.Command))
    names = [*protocol.SCHEMA[command], "extra"]
    header = {fdp.PickValueInList(names): value(fdp) for _ in range(fdp.ConsumeIntInRange(0, 8))}
    packed = protocol.pack(header)
    if shape == 2:  # the declared header length is the fuzzer's, not the header's
        length = fdp.ConsumeIntInRange(0, 2**32 - 1).to_bytes(4, "big")
        return [protocol.SIGNATURE + bytes([command]) + length + packed + fdp.ConsumeBytes(
            fdp.remaining_bytes())]
    start = protocol.SIGNATURE + bytes([command]) + len(packed).to_bytes(4, "big") + packed
    body = fdp.ConsumeBytes(fdp.remaining_bytes())
    return [start, body] if shape == 3 else [start + body]


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
    again = protocol.decode(protocol.encode(frame.command, frame.header, bytes(frame.body)))
    # Compared as bytes: a NaN in a field the schema does not name travels, and NaN != NaN.
    assert (again.command, protocol.pack(again.header),
            again.body) == (frame.command, protocol.pack(frame.header), frame.body)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
