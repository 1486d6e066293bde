"""The pages a forked child has copied on write: its /proc pagemap against its parent's.

Each pagemap entry is 8 bytes per virtual page: bit 63 present, bit 56 mapped by this process
only, bits 0-54 the physical page (readable as root). A page the child shares with the fork
server has the same physical page in both; a page the child wrote to since the fork was copied
and has a physical page of its own. Only the child's writable private mappings are read: the
malloc heap and anonymous memory (pymalloc arenas, large allocations).
"""

from __future__ import annotations

import array
import ctypes
import os
from pathlib import Path
from typing import Any

PAGE = os.sysconf("SC_PAGE_SIZE")
PRESENT = 1 << 63
EXCLUSIVE = 1 << 56
PFN = (1 << 55) - 1


def private_mappings(pid: int | str = "self") -> list[tuple[int, int, str]]:
    """(start, end, kind) of each writable private mapping: ``[heap]`` or anonymous."""
    found = []
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        fields = line.split()
        path = fields[5] if len(fields) > 5 else ""
        if fields[1].startswith("rw") and fields[1].endswith("p") and path in ("", "[heap]"):
            start, end = (int(x, 16) for x in fields[0].split("-"))
            found.append((start, end, path or "anonymous"))
    return found


def entries(pid: int | str, start: int, end: int) -> array.array[int]:
    """The pagemap entries of pages ``start``..``end`` (addresses) of ``pid``."""
    table = array.array("Q")
    fd = os.open(f"/proc/{pid}/pagemap", os.O_RDONLY)
    try:
        table.frombytes(os.pread(fd, (end - start) // PAGE * 8, start // PAGE * 8))
    finally:
        os.close(fd)
    return table


def copied_pages(parent: int, child: int | str = "self", words: bool = True) -> dict[str, Any]:
    """The child's pages (numbers) copied from ``parent``, and counts for each mapping kind.

    Also counts the pages the child maps alone (bit 56) and those it made after the fork (not
    present in the parent), which are its own without being copies. With ``words``, also the
    words that differ on the copied pages (:func:`written_words`; read from the child itself).
    """
    mappings = private_mappings(child)
    pages: list[int] = []
    counts = {"copied": 0, "exclusive": 0, "new": 0, "heap copied": 0, "anonymous copied": 0}
    for start, end, kind in mappings:
        mine, theirs = entries(child, start, end), entries(parent, start, end)
        first = start // PAGE
        for i, entry in enumerate(mine):
            if not entry & PRESENT:
                continue
            counts["exclusive"] += bool(entry & EXCLUSIVE)
            other = theirs[i] if i < len(theirs) else 0
            if not other & PRESENT:
                counts["new"] += 1
            elif other & PFN != entry & PFN:
                counts["copied"] += 1
                counts[f"{'heap' if kind == '[heap]' else 'anonymous'} copied"] += 1
                pages.append(first + i)
    heap = [(start, end) for start, end, kind in mappings if kind == "[heap]"]
    return {"pages": pages, "counts": counts, "written": written_words(parent, pages) if words
            else [], "heap": heap, "parent": parent}


def written_words(parent: int, pages: list[int]) -> list[tuple[int, int, int]]:
    """(address, parent's word, child's word) of each 8-byte word that differs on the copied pages.

    The child's pages are copied into one buffer first, so the comparison's own allocations do
    not show up as writes. A page copied with no word differing was written and restored (a
    reference count raised and dropped again).
    """
    mine = bytearray(len(pages) * PAGE)
    base = (ctypes.c_char * len(mine)).from_buffer(mine)
    for i, page in enumerate(pages):
        ctypes.memmove(ctypes.addressof(base) + i * PAGE, page * PAGE, PAGE)
    theirs = bytearray(len(mine))
    fd = os.open(f"/proc/{parent}/mem", os.O_RDONLY)
    try:
        for i, page in enumerate(pages):
            theirs[i * PAGE:(i + 1) * PAGE] = os.pread(fd, PAGE, page * PAGE)
    finally:
        os.close(fd)
    del base
    now, then = array.array("Q", bytes(mine)), array.array("Q", bytes(theirs))
    words = PAGE // 8
    return [(pages[i // words] * PAGE + (i % words) * 8, then[i], now[i])
            for i in range(len(now)) if now[i] != then[i]]
