"""A child's copied pages described from outside: which objects the fork server holds on them.

For any child and its fork server (read as root through /proc/PID/mem, no code in either):
each copied page (``pagemap.copied_pages``) is parsed in the server's memory as CPython 3.11
lays it out. On a pymalloc pool (its header gives the block size) each block is an object if
a word where its type pointer would sit (after the reference count, behind a GC header, or
also a managed dict's two pointers) points to a type object, whose name is read from it; on
the malloc heap the same is done for each glibc chunk. The words that differ between child and
server name the object and field written (offset 0: the reference count).

    python bench/spawn.py --children 10 --cold 1 --pages
"""

from __future__ import annotations

import os
import re
import struct
from collections import Counter
from typing import Any

from page_owners import file_package
from pagemap import PAGE, copied_pages, private_mappings

POOL = 16 * 1024
POOL_HEADER = 48
TP_NAME, TP_FLAGS = 24, 168  # offsets in PyTypeObject (64-bit CPython 3.11)
TYPE_SUBCLASS = 1 << 31
FUNC_CODE, CO_FILENAME = 48, 112  # PyFunctionObject.func_code, PyCodeObject.co_filename
NAME = re.compile(rb"[A-Za-z_][A-Za-z0-9_.]*")
USER_SPACE = 1 << 47  # x86-64 user addresses: anything above is not a pointer into the server
TYPE_OFFSETS = (8, 24, 40)  # ob_type behind nothing, a GC header, or a GC header and managed dict


class Memory:
    """The fork server's memory, read through /proc/PID/mem, with type names resolved and cached."""

    def __init__(self, pid: int) -> None:
        self.fd = os.open(f"/proc/{pid}/mem", os.O_RDONLY)
        self.names: dict[int, str | None] = {}

    def close(self) -> None:
        os.close(self.fd)

    def read(self, address: int, size: int) -> bytes:
        if not 0 < address < USER_SPACE:
            return b""
        try:
            return os.pread(self.fd, size, address)
        except OSError:
            return b""

    def word(self, address: int) -> int:
        data = self.read(address, 8)
        return struct.unpack("<Q", data)[0] if len(data) == 8 else 0

    def type_name(self, address: int) -> str | None:
        """The name of the type object at ``address``, or None if there is none there."""
        if address in self.names:
            return self.names[address]
        name = None
        # It is a type if its own type is ``type`` or a subclass (Py_TPFLAGS_TYPE_SUBCLASS), and
        # so is that one's; its name is a dotted identifier.
        meta = self.word(address + 8)
        if self._is_metatype(meta) and self._is_metatype(self.word(meta + 8)):
            raw = self.read(self.word(address + TP_NAME), 120).split(b"\0", 1)
            if len(raw) == 2 and NAME.fullmatch(raw[0]):
                name = raw[0].decode()
        self.names[address] = name
        return name

    def _is_metatype(self, address: int) -> bool:
        return address > 4096 and bool(self.word(address + TP_FLAGS) & TYPE_SUBCLASS)

    def object_at(self, block: int) -> tuple[int, str] | None:
        """(the object's address, its kind) for a block or chunk starting at ``block``.

        The kind is its type's name, and for code and functions also the package of the source
        file (``code litellm``).
        """
        for offset in TYPE_OFFSETS:
            candidate = self.word(block + offset)
            if candidate > 4096:
                name = self.type_name(candidate)
                if name:
                    address = block + offset - 8
                    return address, self._refined(address, name)
        return None

    def _refined(self, address: int, name: str) -> str:
        code = address if name == "code" else self.word(
            address + FUNC_CODE) if name == "function" else 0
        return f"{name} {file_package(self.ascii(self.word(code + CO_FILENAME)))}" if code else name

    def ascii(self, address: int) -> str:
        """The text of the compact ASCII str object at ``address`` (its length at +16, its data at
        +48)."""
        length = self.word(address + 16)
        return self.read(address + 48,
                         length).decode("ascii", "replace") if 0 < length < 4096 else ""


class Layout:
    """The objects the server holds on given pages: pymalloc blocks, or glibc chunks on the heap."""

    def __init__(self, server: Memory, heap: list[tuple[int, int]]) -> None:
        self.server = server
        self.heap = heap
        self._chunks: list[tuple[int, int]] | None = None
        self._pools: dict[int, list[tuple[int, int, bool]] | None] = {}

    def items(self, page: int) -> list[tuple[int, int, str, int]]:
        """(start, end, kind, object address) of everything allocated on ``page``; kind ``free`` if
        free."""
        start, end = page * PAGE, (page + 1) * PAGE
        if any(a <= start < b for a, b in self.heap):
            spans = [(a, b, True) for a, b in self.chunks() if a < end and b > start]
        else:
            pool = self.pool(start - start % POOL)
            if pool is None:
                return [(start, end, "not a pymalloc pool", start)]
            spans = [s for s in pool if s[0] < end and s[1] > start]
        found = []
        for a, b, used in spans:
            obj = self.server.object_at(a) if used else None
            found.append((a, b, obj[1], obj[0]) if obj
                         else (a, b, "object of no type found" if used else "free", a))
        return found

    def pool(self, address: int) -> list[tuple[int, int, bool]] | None:
        """The blocks of the pool at ``address`` (start, end, in use), or None if it is not a
        pool."""
        if address not in self._pools:
            self._pools[address] = self._read_pool(address)
        return self._pools[address]

    def _read_pool(self, address: int) -> list[tuple[int, int, bool]] | None:
        header = self.server.read(address, POOL_HEADER)
        if len(header) < POOL_HEADER:
            return None
        count, freeblock, _, _, _, szidx, nextoffset, maxnext = struct.unpack(
            "<IxxxxQQQIIII", header)
        if szidx >= 32 or not POOL_HEADER <= nextoffset <= POOL or maxnext > POOL:
            return None
        size = (szidx + 1) * 16
        free = set()
        while freeblock and len(free) < POOL // 16:  # the free list: each free block's first word
            free.add(freeblock)
            freeblock = self.server.word(freeblock)
        return [(b, b + size, b not in free)
                for b in range(address + POOL_HEADER, address + nextoffset, size)]

    def chunks(self) -> list[tuple[int, int]]:
        """Each glibc chunk's user memory on the heap (start, end), walked from the heap's start."""
        if self._chunks is None:
            self._chunks = []
            for start, end in self.heap:
                data = self.server.read(start, end - start)
                at = 0
                while at + 16 <= len(data):
                    size = struct.unpack_from("<Q", data, at + 8)[0] & ~7
                    if size < 32 or at + size > len(data):
                        break
                    self._chunks.append((start + at + 16, start + at + size))
                    at += size
        return self._chunks


def describe(child: int, server: int) -> dict[str, Any]:
    """Histograms of the child's copied pages by the objects the server holds there, and by net
    writes."""
    copied = copied_pages(server, child, words=False)
    heap = [(a, b) for a, b, kind in private_mappings(server) if kind == "[heap]"]
    memory, mine = Memory(server), Memory(child)
    layout = Layout(memory, heap)
    share: Counter[str] = Counter()
    written_pages: Counter[str] = Counter()
    fields: Counter[str] = Counter()
    quiet = 0
    try:
        for page in copied["pages"]:
            items = layout.items(page)
            written = _written(memory, mine, page, items, fields)
            written_pages.update(written)
            if not written:
                quiet += 1
                for _, _, kind, _ in items:
                    share[kind] += 1 / len(items)
    finally:
        memory.close()
        mine.close()
    return {"counts": copied["counts"], "pages with no word changed": quiet,
            "pages written, by kind written": dict(written_pages),
            "words written, by kind and field": dict(fields),
            "pages with no word changed, share by object count": {
                k: round(v, 1) for k, v in share.items()}}


def _written(server: Memory, child: Memory, page: int, items: list[tuple[int, int, str, int]],
             fields: Counter[str]) -> set[str]:
    """The kinds of object whose words differ on ``page`` between child and server; counts
    fields."""
    address = page * PAGE
    theirs, ours = server.read(address, PAGE), child.read(address, PAGE)
    kinds = set()
    for i in range(0, min(len(theirs), len(ours)), 8):
        if theirs[i:i + 8] == ours[i:i + 8]:
            continue
        where = address + i
        item = next((it for it in items if it[0] <= where < it[1]), None)
        kind = item[2] if item else "between allocations"
        offset = where - item[3] if item else 0
        field = "refcount" if offset == 0 else "header" if offset < 0 else f"+{offset}"
        fields[f"{kind} {field}"] += 1
        kinds.add(kind)
    return kinds


def render(result: dict[str, Any], top: int = 25) -> str:
    """The description as plain text, largest first."""
    lines = [f"pagemap: {result['counts']}",
             f"pages with no word changed: {result['pages with no word changed']}"]
    for key in ("pages written, by kind written", "words written, by kind and field",
                "pages with no word changed, share by object count"):
        lines.append(f"{key}:")
        lines += [f"  {n:8.1f}  {kind}"
                  for kind, n in sorted(result[key].items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(lines)
