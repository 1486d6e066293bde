"""The fork server's holes (robotd/holes.py): free pymalloc blocks and malloc chunks, taken for good."""

from __future__ import annotations

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


def test_the_fence_takes_the_free_malloc_chunks_of_the_main_heap() -> None:
    import ctypes

    # Given free chunks on glibc's main heap: every other one of many 200-byte allocations freed
    libc = holes._glibc()
    assert libc is not None, "these tests run on glibc"
    libc.free.argtypes = [ctypes.c_void_p]
    chunks = [libc.malloc(200) for _ in range(400)]
    for chunk in chunks[::2]:
        libc.free(chunk)
    free_before = sum(count for _, count in holes.free_chunks(libc))
    assert free_before >= 100

    # When the free chunks are fenced
    taken = holes.fence_free_chunks()

    # Then none is left free in the main arena's bins
    assert taken >= 100
    assert sum(count for _, count in holes.free_chunks(libc)) < free_before // 10
