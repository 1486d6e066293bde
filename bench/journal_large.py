"""The broker journal's cost for a large body: a write, and its delete once settled, per checkpoint
policy.

A message that does not settle within its grace is written when it falls due and deleted when
it settles, each a commit on the broker's loop. This times both with the real
:class:`~robotlab.broker.journal.Journal` (WAL, ``synchronous=NORMAL``, a temporary file) for
bodies of ``--mib`` MiB, under two checkpoint policies, interleaved round by round:

- ``sqlite default``: ``wal_autocheckpoint=1000`` pages, SQLite's default, under which a
  checkpoint (with its fsyncs) runs inside nearly every such commit;
- ``journal``: the journal's own (``CHECKPOINT_PAGES``, and a checkpoint when the loop is idle,
  here between rounds, outside the timing).

Wall-clock medians, so the machine's load moves the absolute numbers; the two columns ran in
the same minute. Not run by CI::

    python bench/journal_large.py [--mib 4] [--n 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from robotlab.broker.journal import Journal

POLICIES: dict[str, int | None] = {"sqlite default": 1000, "journal": None}


def one_round(pages: int | None, body: bytes, n: int) -> tuple[list[float], list[float]]:
    """Milliseconds per commit of a write and of its delete, ``n`` each."""
    writes, deletes = [], []
    with tempfile.TemporaryDirectory(prefix="rl-bench-journal-") as folder:
        journal = Journal(os.path.join(folder, "broker.db"), 1 << 30)
        if pages is not None:
            journal._db.execute(f"PRAGMA wal_autocheckpoint={pages}")
        try:
            for i in range(n):
                key = ("sender", f"m{i}")
                journal.put(key, {"id": key[1], "to": "slow"}, body, "sender", key[1])
                start = time.perf_counter()
                journal.commit(everything=True)  # fell due: written
                writes.append((time.perf_counter() - start) * 1000)
                journal.settle(key)
                start = time.perf_counter()
                journal.commit()  # settled: deleted
                deletes.append((time.perf_counter() - start) * 1000)
                if pages is None:
                    journal.idle()  # the loop's quiet moment, untimed
        finally:
            journal.close()
    return writes, deletes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=float, default=4.0, help="body size in MiB")
    parser.add_argument("--n", type=int, default=20, help="messages per round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    args = parser.parse_args()
    body = os.urandom(int(args.mib * (1 << 20)))
    results: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in POLICIES}
    for _ in range(args.rounds):
        for name, pages in POLICIES.items():
            writes, deletes = one_round(pages, body, args.n)
            results[name][0].extend(writes)
            results[name][1].extend(deletes)
    print(f"| {args.mib:g} MiB body, ms per commit (median of {args.rounds * args.n}) | write | "
          "delete |")
    print("| --- | ---: | ---: |")
    for name, (writes, deletes) in results.items():
        print(f"| {name} | {statistics.median(writes):.1f} | {statistics.median(deletes):.1f} |")


if __name__ == "__main__":
    main()
