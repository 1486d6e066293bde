"""The free memory between the fork server's objects, taken for good before the freeze.

A process puts its new objects first into the free memory it already has: pymalloc's free
blocks in its partly used pools (small objects), glibc's free chunks and per-thread cache
(larger ones). In a spawned child those are the holes the warm-up's garbage left between
inherited objects, so each of its first allocations copies a page the fork server filled. Taken
here, they send the child's objects to memory of their own, pages it needs anyway. What is
taken is never freed: a few hundred kB, shared by every child. Measured in docs/benchmarks.md.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
import tempfile

# A row of the size-class table sys._debugmallocstats() prints: class, block size, pools, blocks in
# use, free blocks.
_POOL_ROW = re.compile(rb"^\s*\d+\s+(\d+)\s+\d+\s+\d+\s+(\d+)\s*$", re.MULTILINE)
# A free-chunk bin of the main arena in glibc's malloc_info(): chunk sizes from..to (each one
# more than the size), how many chunks.
_BIN_ROW = re.compile(rb'<size from="(\d+)" to="\d+" total="\d+" count="(\d+)"/>')
# glibc's per-thread cache: up to 7 chunks of each size from 32 to 1,040 bytes, which malloc_info
# does not list.
_TCACHE_SIZES = range(32, 1041, 16)
_TCACHE_COUNT = 7
_CHUNK_HEADER = 8


def take_holes() -> tuple[int, int]:
    """Take the free pymalloc blocks, then the free malloc chunks; return how many of each."""
    return fence_free_blocks(), fence_free_chunks()


def fence_free_blocks() -> int:
    """Take every free block of pymalloc's partly used pools; return how many were taken.

    Raw allocations (``PyObject_Malloc``). What is left free afterwards is the few pools this
    function's own objects opened, fresh ones.
    """
    malloc = ctypes.pythonapi.PyObject_Malloc
    malloc.restype = ctypes.c_void_p
    malloc.argtypes = [ctypes.c_size_t]
    free = free_blocks()
    for size, count in free.items():
        for _ in range(count):
            malloc(size)
    return sum(free.values())


def free_blocks() -> dict[int, int]:
    """The free blocks in pymalloc's partly used pools, by block size.

    From ``sys._debugmallocstats()``, CPython's only report of them, which it prints to the C
    stderr: read back through a temporary file. Without pymalloc (``PYTHONMALLOC=malloc``) it
    lists no size classes, and so nothing is taken.
    """
    sys.stderr.flush()
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        return {int(size): int(free) for size, free in _POOL_ROW.findall(out.read())}


def fence_free_chunks() -> int:
    """Take glibc's cached and free chunks on the main heap; return how many bins' chunks were
    taken.

    First the main thread's cache (``malloc`` serves from it before anything else), then each
    free chunk ``malloc_info`` lists, by asking for its size. Without glibc nothing is done.
    """
    libc = _glibc()
    if libc is None:
        return 0
    for size in _TCACHE_SIZES:
        for _ in range(_TCACHE_COUNT):
            libc.malloc(size - _CHUNK_HEADER)
    free = free_chunks(libc)
    for size, count in free:
        for _ in range(count):
            libc.malloc(max(size, _TCACHE_SIZES[0]) - _CHUNK_HEADER)
    return sum(count for _, count in free)


def free_chunks(libc: ctypes.CDLL) -> list[tuple[int, int]]:
    """(chunk size, count) of each bin of free chunks in glibc's main arena, from
    ``malloc_info``."""
    text = ctypes.c_char_p()
    length = ctypes.c_size_t()
    stream = libc.open_memstream(ctypes.byref(text), ctypes.byref(length))
    try:
        libc.malloc_info(0, ctypes.c_void_p(stream))
    finally:
        libc.fclose(ctypes.c_void_p(stream))
    report = ctypes.string_at(text, length.value)
    libc.free(text)
    main_arena = report.split(b"</heap>")[0]
    return [(int(start) - 1, int(count)) for start, count in _BIN_ROW.findall(main_arena)]


def _glibc() -> ctypes.CDLL | None:
    libc = ctypes.CDLL(None)
    if not all(hasattr(libc, name) for name in ("malloc_info", "open_memstream")):
        return None
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.open_memstream.restype = ctypes.c_void_p
    return libc
