"""The fork server's holes (robotd/holes.py): free pymalloc blocks and malloc chunks, taken for
good."""

from __future__ import annotations

import json
import subprocess
import sys

from robotd import holes


def test_the_fence_takes_the_free_blocks_left_between_live_objects() -> None:
    # Given a pymalloc size class full of holes: every other one of many small objects freed
    # (bytes of 160 bytes take 193 with their header: the 208-byte class)
    kept = [bytes([i % 256]) * 160 for i in range(6000)]
    del kept[::2]
    free_before = holes.free_blocks()[208]
    assert free_before >= 2000

    # When the free blocks are fenced
    taken = holes.fence_free_blocks()

    # Then they were taken: what is left of that class is less than one fresh pool's blocks
    assert taken >= free_before
    assert holes.free_blocks()[208] < 16384 // 208
    assert len(kept) == 3000


FENCE_CHUNKS = """
import ctypes, json
from robotd import holes
libc = holes._glibc()
assert libc is not None, "these tests run on glibc"
libc.free.argtypes = [ctypes.c_void_p]
chunks = [libc.malloc(200) for _ in range(400)]
for chunk in chunks[::2]:
    libc.free(chunk)
before = sum(count for _, count in holes.free_chunks(libc))
taken = holes.fence_free_chunks()
after = sum(count for _, count in holes.free_chunks(libc))
print(json.dumps([before, taken, after]))
"""


def test_the_fence_takes_the_free_malloc_chunks_of_the_main_heap() -> None:
    # In a process of its own with one thread, as the fork server is when it fences: in a test
    # worker, threads other tests left running malloc and free on the same heap meanwhile.
    # Given free chunks on glibc's main heap: every other one of many 200-byte allocations freed
    # When the free chunks are fenced
    run = subprocess.run([sys.executable, "-c", FENCE_CHUNKS], capture_output=True, text=True,
                         timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    before, taken, after = json.loads(run.stdout.splitlines()[-1])

    # Then they were taken, and none is left free in the main arena's bins
    assert before >= 100 and taken >= 100
    assert after < before // 10
