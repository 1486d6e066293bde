"""A robot's conversation log over a long night: the time a task takes as the log grows.

A robot serving all night keeps one conversation, trimmed now and then (a window overflow, a
compaction) while its log keeps every entry. This runs ``--tasks`` short tasks on one Robot
whose model answers at once, clearing the conversation every ``--clear-every`` tasks so that
only the log grows, and prints the mean time a task took in each block of ``--every`` tasks,
with a history file (``history_path``) and without one (the baseline: the same robot, no
file), one after the other in the same run, with the process's RSS at the end of each block,
plus the file's size at the end.

    python bench/history_growth.py [--tasks 3000] [--every 500] [--clear-every 20]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from robotlab import Robot
from robotlab.inference.reply import LLMReply


class AtOnce:
    """A model that answers every request at once, remembering nothing."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                 params: dict[str, Any], on_chunk: Any = None) -> LLMReply:
        return LLMReply(content="noted", model="at-once")


def series(path: Path | None, tasks: int, every: int,
           clear_every: int) -> list[tuple[float, float]]:
    """Mean milliseconds a task took, and RSS (MB) after it, per block of ``every`` tasks."""
    robot = Robot(name="night", system_prompt="You note things.", llm=AtOnce(),
                  history_path=path)
    means, started = [], time.perf_counter()
    for task in range(1, tasks + 1):
        robot.run(f"task {task}: note that the time is {time.time():.3f}")
        if clear_every and task % clear_every == 0:
            robot.clear_messages()
        if task % every == 0:
            now = time.perf_counter()
            rss = psutil.Process().memory_info().rss / 1e6
            means.append(((now - started) / every * 1000, rss))
            started = now
    return means


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=3000)
    parser.add_argument("--every", type=int, default=500)
    parser.add_argument("--clear-every", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "night.history"
        with_file = series(path, args.tasks, args.every, args.clear_every)
        size = path.stat().st_size
    without = series(None, args.tasks, args.every, args.clear_every)
    print(f"{'tasks':>6} {'with file: ms/task':>19} {'RSS MB':>7} {'no file: ms/task':>17} "
          f"{'RSS MB':>7}")
    for block, (filed, bare) in enumerate(zip(with_file, without, strict=True), start=1):
        print(f"{block * args.every:>6} {filed[0]:>19.2f} {filed[1]:>7.1f} {bare[0]:>17.2f} "
              f"{bare[1]:>7.1f}")
    print(f"file at the end: {size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
